# A tool's --help text -> a man page (man(7) roff). The help text is the one
# source: it is laid out like a man page already (see tools/man/README.md):
#   an optional first line "Usage: ..." (skipped: SYNOPSIS says it),
#   section headings in capitals at column 0 (NAME, SYNOPSIS, OPTIONS, ...),
#   bodies indented 4 spaces; inside OPTIONS a line whose text starts with
#   "-" at indent 4, 6 or 8 opens an option (its tag ends at the first run
#   of 2+ spaces), deeper indented lines continue it; elsewhere 4-space lines are filled prose and
#   deeper ones are kept as they are (lists, formats).
# Variables: tool (e.g. iwping), section (1), source (footer), see (SEE ALSO
# list, comma separated, may be empty).
function esc(s) {
	gsub(/\\/, "\\e", s)
	gsub(/-/, "\\-", s)
	if (s ~ /^[.']/)
		s = "\\&" s
	return s
}
function close_nf() {
	if (nf) {
		print ".fi"
		nf = 0
	}
}
function flush_opt() {
	if (opt_tag != "") {
		print ".TP"
		print ".B " esc(opt_tag)
		if (opt_text != "")
			print esc(opt_text)
	}
	opt_tag = ""
	opt_text = ""
}
BEGIN {
	sect = ""
	nf = 0
	printf ".TH %s %s \"\" \"%s\" \"libiwarp tools\"\n", toupper(tool), section, source
}
NR == 1 && /^Usage: / { next }
/^[A-Z][A-Z ]*[A-Z]$/ {
	flush_opt()
	close_nf()
	sect = $0
	print ".SH " sect
	next
}
sect == "" { next }
/^[ \t]*$/ {
	flush_opt()
	close_nf()
	if (sect != "NAME" && sect != "SYNOPSIS" && sect != "OPTIONS")
		para = 1
	next
}
{
	line = $0
	sub(/^    /, "", line)
}
sect == "NAME" {
	print esc(line)
	next
}
sect == "SYNOPSIS" {
	if (!nf) {
		print ".nf"
		nf = 1
	}
	print esc(line)
	next
}
sect == "OPTIONS" && line ~ /^-|^  -|^    -/ {
	flush_opt()
	sub(/^ +/, "", line)
	if (match(line, /   */)) {
		opt_tag = substr(line, 1, RSTART - 1)
		opt_text = substr(line, RSTART + RLENGTH)
	} else {
		opt_tag = line
	}
	next
}
sect == "OPTIONS" && opt_tag != "" {
	sub(/^ +/, "", line)
	opt_text = opt_text (opt_text == "" ? "" : " ") line
	next
}
line ~ /^ / {
	# Deeper than the body: keep the layout.
	if (para) {
		print ".PP"
		para = 0
	}
	if (!nf) {
		print ".nf"
		nf = 1
	}
	print esc(line)
	next
}
{
	close_nf()
	if (para) {
		print ".PP"
		para = 0
	}
	print esc(line)
}
END {
	flush_opt()
	close_nf()
	if (see != "") {
		print ".SH SEE ALSO"
		n = split(see, s, ",")
		for (i = 1; i <= n; i++)
			printf ".BR %s (1)%s\n", s[i], i < n ? "," : ""
	}
}
