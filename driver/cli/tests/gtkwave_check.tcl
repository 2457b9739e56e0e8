# Run by `gtkwave --script` once it has loaded a waveform with its save file:
# writes to $TESSERA_GTKW_REPORT how many signals the save file
# ($TESSERA_GTKW) names, how many GTKWave displays, and each named signal it
# does not display, then quits.
set wanted {}
set fh [open $env(TESSERA_GTKW) r]
while {[gets $fh line] >= 0} {
  set c [string index $line 0]
  if {$line eq "" || [string first $c "\[@-^*"] >= 0} continue
  # "+{shown name} signal": a row with its own name.
  if {$c eq "+"} { set line [string range $line [expr {[string first "\} " $line] + 2}] end] }
  lappend wanted $line
}
close $fh
set shown [gtkwave::getDisplayedSignals]
set out [open $env(TESSERA_GTKW_REPORT) w]
puts $out "wanted [llength $wanted] shown [llength $shown]"
foreach s $wanted {
  if {[lsearch -exact $shown $s] < 0} { puts $out "missing $s" }
}
close $out
gtkwave::/File/Quit
