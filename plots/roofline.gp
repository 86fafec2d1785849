# roofline.gp -- calibration measurements against a profile's fitted model
# per operator class (servesim plot roofline).  Reads params.gp (n_ops,
# op_I, peak_tflops_I, bw_tbs_I, profile_name) and datadir/roofline_OP.dat:
# "intensity measured_tflops fitted_tflops measured_ms fitted_ms".  The line
# is the profile's reference roofline min(peak, intensity x bandwidth).
rows = n_ops <= 2 ? 1 : 2
cols = n_ops == 1 ? 1 : 2
set multiplot layout rows,cols title plot_title font ",16"
set grid
set logscale xy
set key top left opaque
set xlabel "arithmetic intensity (FLOP/byte)"
set ylabel "achieved TFLOP/s"
set samples 400
do for [i=1:n_ops] {
    op = value(sprintf("op_%d", i))
    pk = value(sprintf("peak_tflops_%d", i))
    bw = value(sprintf("bw_tbs_%d", i))
    set title op." (profile ".profile_name.")"
    set xrange [value(sprintf("xlo_%d", i)) / 3 : value(sprintf("xhi_%d", i)) * 3]
    f = sprintf("%s/roofline_%s.dat", datadir, op)
    plot f using 1:2 with points pt 7 ps 0.6 lc rgb "#3a78c2" title "measured", \
         f using 1:3 with points pt 6 ps 0.6 lc rgb "#e8772e" title "fitted (profile)", \
         (x * bw < pk ? x * bw : pk) with lines lw 2 lc rgb "#555555" title sprintf("roofline %.0f TFLOP/s, %.2f TB/s", pk, bw)
}
unset multiplot
