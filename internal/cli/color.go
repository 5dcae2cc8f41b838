package cli

import (
	"io"
	"os"

	"golang.org/x/term"
)

// useColor decides on colour: "always", "never", or "auto" (a terminal and
// NO_COLOR unset).
func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
