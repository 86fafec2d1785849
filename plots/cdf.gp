# cdf.gp -- TTFT, TPOT and E2E CDFs of one or more runs (servesim plot cdf),
# or their tails, 1 - CDF on a log scale (servesim plot ccdf: tail = 1).
# Reads params.gp (terminal, output, datadir, n_inputs, label_I, max_M_I,
# slo_*, tail) and datadir/cdf_{ttft,tpot,e2e}_I.dat: "value fraction", one
# row per request.  Each panel's x range reaches its SLO, so every target
# line is drawn on its own metric's panel.
set multiplot layout 2,2 title plot_title font ",16"
set grid
set key bottom right
tail = exists("tail") ? tail : 0
if (tail) {
    set logscale y
    set yrange [*:1.5]
    set ylabel "fraction of requests above"
    set key top right
} else {
    set yrange [0:1.02]
    set ylabel "fraction of requests"
}
set style line 99 lc rgb "#c00000" dt 2 lw 2
metric(m) = m eq "ttft" ? "TTFT (ms)" : m eq "tpot" ? "TPOT (ms)" : "E2E latency (s)"
do for [m in "ttft tpot e2e"] {
    set title m eq "ttft" ? "time to first token" : m eq "tpot" ? "time per output token" : "end-to-end latency"
    set xlabel metric(m)
    unset arrow
    # the x range: the largest value of any input, or the SLO if larger
    xmax = 0
    do for [i=1:n_inputs] {
        x = value(sprintf("max_%s_%d", m, i))
        if (x > xmax) { xmax = x }
    }
    has_slo = exists("slo_".m)
    if (has_slo) { s = value("slo_".m); if (s > xmax) { xmax = s } }
    set xrange [0:(xmax > 0 ? xmax * 1.05 : 1)]
    if (has_slo) {
        set arrow from s, graph 0 to s, graph 1 nohead ls 99
        plot for [i=1:n_inputs] sprintf("%s/cdf_%s_%d.dat", datadir, m, i) using 1:(tail ? 1 - $2 : $2) \
                 with steps lw 2 title value(sprintf("label_%d", i)), \
             NaN with lines ls 99 title sprintf("SLO %g %s", s, m eq "e2e" ? "s" : "ms")
    } else {
        plot for [i=1:n_inputs] sprintf("%s/cdf_%s_%d.dat", datadir, m, i) using 1:(tail ? 1 - $2 : $2) \
                 with steps lw 2 title value(sprintf("label_%d", i))
    }
}
unset multiplot
