# batch.gp -- tokens per iteration (prefill vs decode) and iteration time
# (servesim plot batch).  Reads datadir/batch.dat: "t_s prefill_tokens
# decode_tokens duration_ms end_s", one row per iteration (run --iterations-csv);
# each iteration is a box from its start to its end.
set multiplot layout 2,1 title plot_title font ",16"
set grid
set key top left opaque
set xlabel "time (s)"
set ylabel "tokens per iteration"
set title sprintf("tokens per iteration (%d iterations; prefill share %.1f%%)", n_iterations, 100 * prefill_share)
set style fill solid 0.8 noborder
set yrange [0:*]
plot datadir."/batch.dat" using (($1 + $5) / 2):($2 + $3):($5 - $1) with boxes lc rgb "#3a78c2" title "decode", \
     ""                   using (($1 + $5) / 2):2:($5 - $1) with boxes lc rgb "#e8772e" title "prefill"
set ylabel "iteration time (ms)"
set title "iteration time"
plot datadir."/batch.dat" using 1:4 with points pt 7 ps 0.7 lc rgb "#555555" title "iteration time (at its start)"
unset multiplot
