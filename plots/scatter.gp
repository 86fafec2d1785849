# scatter.gp -- measured against predicted mean TTFT and TPOT of a
# validation, one colour per slice, log-log, with y = x and +-20% lines
# (servesim plot scatter).  Reads datadir/scatter_{ttft,tpot}_I.dat:
# "measured_ms predicted_ms id" (servesim validate --json rows[]); params:
# n_slices, slice_I, lo_/hi_{ttft,tpot} (the same range on both axes),
# tics_{ttft,tpot} (1-2-5 or 1-2-3-5-7 ticks under two decades, else "").
set multiplot layout 1,2 title plot_title font ",16"
set logscale xy
set grid
set size square
set key top left font ",10" box opaque
palette = "#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b #e377c2 #17becf #bcbd22 #7f7f7f #393b79 #637939"
col(i) = word(palette, (i - 1) % 12 + 1)
ptypes = "7 5 9 11"
ptype(i) = int(word(ptypes, int((i - 1) / 12) % 4 + 1))
set samples 200
do for [m in "ttft tpot"] {
    M = m eq "ttft" ? "TTFT" : "TPOT"
    set title sprintf("mean %s", M)
    if (m eq "ttft") {
        set label 1 sprintf("%d rows drawn; %d not modelled or without a prediction", rows_drawn, rows_left_out) \
            at screen 0.5, screen 0.06 center font ",11"
    } else {
        unset key
        unset label 1
    }
    set xlabel sprintf("measured mean %s (ms)", M)
    set ylabel sprintf("predicted mean %s (ms)", M)
    lo = value("lo_".m)
    hi = value("hi_".m)
    set xrange [lo:hi]
    set yrange [lo:hi]
    t = value("tics_".m)
    if (strlen(t) > 0) { eval "set xtics ".t; eval "set ytics ".t } else { set xtics autofreq; set ytics autofreq }
    plot x with lines lw 2 lc rgb "#333333" title (m eq "ttft" ? "y = x" : ""), \
         1.2 * x with lines dt 2 lw 1.5 lc rgb "#888888" title (m eq "ttft" ? "+-20%" : ""), \
         0.8 * x with lines dt 2 lw 1.5 lc rgb "#888888" notitle, \
         for [i=1:n_slices] sprintf("%s/scatter_%s_%d.dat", datadir, m, i) using 1:2 with points \
             pt ptype(i) ps 1.2 lc rgb col(i) title (m eq "ttft" ? value(sprintf("slice_%d", i)) : "")
}
unset multiplot
