package config

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// FormatDiagnostics renders diags for a terminal, one problem after the
// other:
//
//	FILE:LINE:COL: summary
//	  <the source line>
//	  <spaces>^^^
//	  detail
//
// The carets span the subject range on its first line (at least one).
// Warnings say "warning: " before the summary. files maps the file names in
// the ranges to their source (see LoadFiles); a file missing from it, or a
// range outside it, only loses the source line. It never panics, whatever
// the input.
func FormatDiagnostics(diags hcl.Diagnostics, files map[string][]byte) string {
	var b strings.Builder
	for _, d := range diags {
		if d == nil {
			continue
		}
		sev := ""
		if d.Severity == hcl.DiagWarning {
			sev = "warning: "
		}
		summary := strings.TrimSpace(d.Summary)
		if d.Subject != nil {
			r := *d.Subject
			fmt.Fprintf(&b, "%s:%d:%d: %s%s\n", r.Filename, r.Start.Line, r.Start.Column, sev, summary)
			writeSnippet(&b, files[r.Filename], r)
		} else {
			fmt.Fprintf(&b, "%s%s\n", sev, summary)
		}
		if detail := strings.TrimSpace(d.Detail); detail != "" {
			for _, line := range strings.Split(detail, "\n") {
				b.WriteString("  ")
				b.WriteString(strings.TrimRight(line, " \t\r"))
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// writeSnippet writes the line holding r's start and carets under r.
func writeSnippet(b *strings.Builder, src []byte, r hcl.Range) {
	start := r.Start.Byte
	if src == nil || start < 0 || start > len(src) {
		return
	}
	lineStart := bytes.LastIndexByte(src[:start], '\n') + 1
	lineEnd := len(src)
	if i := bytes.IndexByte(src[start:], '\n'); i >= 0 {
		lineEnd = start + i
	}
	line := bytes.TrimRight(src[lineStart:lineEnd], "\r")
	end := min(max(r.End.Byte, start), lineEnd, lineStart+len(line))
	start = min(start, lineStart+len(line))
	end = max(end, start)

	b.WriteString("  ")
	b.WriteString(strings.ToValidUTF8(string(line), "\uFFFD"))
	b.WriteString("\n  ")
	for _, c := range strings.ToValidUTF8(string(src[lineStart:start]), "\uFFFD") {
		if c == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	n := max(1, utf8.RuneCount(src[start:end]))
	b.WriteString(strings.Repeat("^", n))
	b.WriteString("\n")
}
