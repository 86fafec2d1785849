# rate.gp -- goodput and completion throughput against arrival rate with
# 95% confidence bands and the knee (servesim plot rate).  Reads
# datadir/rate.dat: "rate_per_s completion ci95 goodput ci95 attainment
# ci95" (servesim sweep --json points[]) then the bands clipped to what can
# be (completion >= 0, goodput 0 .. completion, attainment 0 .. 1), and
# datadir/rate_search.dat: the knee searches' rates and goodputs; params:
# knee_goodput_rate, knee_target_rate, attainment_target (when the sweep
# reported them), n_search, logx.  The legend sits below the plot.
set title plot_title font ",16"
set grid
set key outside below horizontal
set xlabel "arrival rate (requests/s)"
set ylabel "requests/s"
set y2label "SLO attainment (%)"
set y2range [0:105]
set y2tics
set ytics nomirror
set yrange [0:*]
if (logx) set logscale x
set style fill transparent solid 0.25 noborder
f = datadir."/rate.dat"
if (exists("knee_goodput_rate")) {
    set arrow 1 from knee_goodput_rate, graph 0 to knee_goodput_rate, graph 1 nohead lc rgb "#2a9d3a" dt 2 lw 2
    set label 1 sprintf(" knee: max goodput at %.3g req/s", knee_goodput_rate) at knee_goodput_rate, graph 0.95 tc rgb "#2a9d3a"
}
if (exists("knee_target_rate")) {
    set arrow 2 from knee_target_rate, graph 0 to knee_target_rate, graph 1 nohead lc rgb "#c0392b" dt 3 lw 2
    set label 2 sprintf(" max rate meeting %.0f%%: %.3g req/s", 100 * attainment_target, knee_target_rate) at knee_target_rate, graph 0.88 tc rgb "#c0392b"
}
fs = datadir."/rate_search.dat"
plot f using 1:8:9 with filledcurves lc rgb "#3a78c2" title "completion 95% CI", \
     f using 1:2 with linespoints lw 2 pt 7 lc rgb "#3a78c2" title "completion throughput", \
     f using 1:10:11 with filledcurves lc rgb "#2a9d3a" title "goodput 95% CI", \
     f using 1:4 with linespoints lw 2 pt 7 lc rgb "#2a9d3a" title "goodput", \
     f using 1:(100 * $6) axes x1y2 with linespoints lw 1 dt 2 pt 6 lc rgb "#888888" title "SLO attainment (right axis)", \
     (n_search > 0 ? fs : f) using 1:(n_search > 0 ? $2 : NaN) with points pt 2 ps 1.2 lc rgb "#2a9d3a" \
         title (n_search > 0 ? "knee search (goodput)" : "")
