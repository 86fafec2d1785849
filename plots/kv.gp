# kv.gp -- KV blocks used and running / waiting requests over time
# (servesim plot kv).  Reads datadir/kv.dat: "t_s kv_used_blocks running
# waiting" at each iteration's start (run --iterations-csv).
set multiplot layout 2,1 title plot_title font ",16"
set grid
set key top left opaque
set xlabel "time (s)"
set ylabel "KV blocks used"
set title sprintf("KV cache (peak %d blocks)", peak_kv_blocks)
plot datadir."/kv.dat" using 1:2 with steps lw 2 lc rgb "#3a78c2" title "KV blocks used"
set ylabel "requests"
set title "running and waiting requests"
plot datadir."/kv.dat" using 1:3 with steps lw 2 lc rgb "#2a9d3a" title "running", \
     ""                using 1:4 with steps lw 2 lc rgb "#c0392b" title "waiting"
unset multiplot
