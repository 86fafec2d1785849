# cdf.gp -- TTFT, TPOT and E2E CDFs of one or more runs (servesim plot cdf).
# Reads params.gp (terminal, output, datadir, n_inputs, label_I, slo_*) and
# datadir/cdf_{ttft,tpot,e2e}_I.dat: "value fraction", one row per request.
set multiplot layout 2,2 title plot_title font ",16"
set grid
set key bottom right
set yrange [0:1.02]
set ylabel "fraction of requests"
set style line 99 lc rgb "#c00000" dt 2 lw 2
metric(m) = m eq "ttft" ? "TTFT (ms)" : m eq "tpot" ? "TPOT (ms)" : "E2E latency (s)"
do for [m in "ttft tpot e2e"] {
    set title m eq "ttft" ? "time to first token" : m eq "tpot" ? "time per output token" : "end-to-end latency"
    set xlabel metric(m)
    unset arrow
    set xrange [0:*]
    if (exists("slo_".m)) {
        s = value("slo_".m)
        set arrow from s, graph 0 to s, graph 1 nohead ls 99
        plot for [i=1:n_inputs] sprintf("%s/cdf_%s_%d.dat", datadir, m, i) using 1:2 with steps lw 2 \
                 title value(sprintf("label_%d", i)), \
             NaN with lines ls 99 title sprintf("SLO %g %s", s, m eq "e2e" ? "s" : "ms")
    } else {
        plot for [i=1:n_inputs] sprintf("%s/cdf_%s_%d.dat", datadir, m, i) using 1:2 with steps lw 2 \
                 title value(sprintf("label_%d", i))
    }
}
unset multiplot
