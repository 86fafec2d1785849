# rate.gp -- goodput and completion throughput against arrival rate with
# 95% confidence bands and the knee (servesim plot rate).  Reads
# datadir/rate.dat: "rate_per_s completion ci95 goodput ci95 attainment
# ci95" (servesim sweep --json points[]); params: knee_goodput_rate,
# knee_target_rate, attainment_target (when the sweep reported them), logx.
set title plot_title font ",16"
set grid
set key top left
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
plot f using 1:($2 - $3):($2 + $3) with filledcurves lc rgb "#3a78c2" title "completion 95% CI", \
     f using 1:2 with linespoints lw 2 pt 7 lc rgb "#3a78c2" title "completion throughput", \
     f using 1:($4 - $5):($4 + $5) with filledcurves lc rgb "#2a9d3a" title "goodput 95% CI", \
     f using 1:4 with linespoints lw 2 pt 7 lc rgb "#2a9d3a" title "goodput", \
     f using 1:(100 * $6) axes x1y2 with linespoints lw 1 dt 2 pt 6 lc rgb "#888888" title "SLO attainment (right axis)"
