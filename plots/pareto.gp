# pareto.gp -- $ per 1M good tokens against p99 latency of a plan's
# candidates, the Pareto frontier joined (servesim plot pareto).  Reads
# datadir/pareto.dat and datadir/frontier.dat: "p99_ms usd_per_1m
# usd_per_hour name" (servesim plan --json candidates[], pareto[]) and
# datadir/labels.dat: "x label_y point_y name", each name moved off its
# neighbours' and joined to its point by a thin line.
set title plot_title font ",16"
set grid
set key top right
set xlabel sprintf("p99 %s (ms), whole fleet at the target rate", latency_name eq "ttft" ? "TTFT" : latency_name eq "tpot" ? "TPOT" : "E2E")
set ylabel "USD per 1M good output tokens"
set offsets graph 0.1, graph 0.2, graph 0.1, graph 0.1
if (strlen(not_plotted) > 0) set label 10 "not plotted: ".not_plotted at graph 0.01, graph 0.03 font ",10"
if (strlen(recommended) > 0) set label 11 "recommended: ".recommended at graph 0.01, graph 0.97 font ",12"
plot datadir."/frontier.dat" using 1:2 with lines lw 2 lc rgb "#c0392b" title "Pareto frontier", \
     datadir."/pareto.dat" using 1:2 with points pt 7 ps 1.5 lc rgb "#3a78c2" title "feasible candidates", \
     datadir."/labels.dat" using 1:2:(0):($3 - $2) with vectors nohead lc rgb "#bbbbbb" notitle, \
     datadir."/labels.dat" using 1:2:4 with labels offset 1,0.5 left notitle
