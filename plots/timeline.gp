# timeline.gp -- per-request lanes (servesim plot timeline).
# Reads params.gp (n_panels, lanes_I, t_max_I, ytic_I_K (lane K's request id), label_I,
# has_kind_K)
# and datadir/timeline_I.dat: "lane start_ms end_ms kind", kind 0 queued,
# 1 prefill (first admission to first token, or one chunk in a trace),
# 2 decode step (one output token), 3 arrival to first token (a replay:
# queueing and prefill not told apart).  Lane 0 is drawn at the top.
set multiplot layout n_panels,1 title plot_title font ",16"
set grid x
set xlabel "time (ms)"
set ylabel "request"
set key outside right top
set style fill solid 0.85 border rgb "black"
kname(k) = k == 0 ? "queued" : k == 1 ? "prefill" : k == 2 ? "decode step" : "arrival to first token"
kcol(k) = k == 0 ? "#bbbbbb" : k == 1 ? "#e8772e" : k == 2 ? "#3a78c2" : "#a05cc0"
do for [i=1:n_panels] {
    set title value(sprintf("label_%d", i))
    n = value(sprintf("lanes_%d", i))
    set yrange [n - 0.5:-0.5]
    set xrange [0:value(sprintf("t_max_%d", i)) * 1.02]
    set ytics ()
    do for [k=0:n-1] { set ytics add (value(sprintf("ytic_%d_%d", i, k)) k) }
    f = sprintf("%s/timeline_%d.dat", datadir, i)
    plot for [k=0:3] f using (($4 == k) ? ($2 + $3) / 2 : NaN):1:(($3 - $2) / 2):(0.35) \
         with boxxyerror lc rgb kcol(k) title (value(sprintf("has_kind_%d", k)) ? kname(k) : "")
}
unset multiplot
