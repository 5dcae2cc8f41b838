// Package cli is podward's command line (cobra): it parses flags, builds
// what a command needs and prints results. Commands return an *ExitError
// for a non-zero exit; only main calls os.Exit.
//
// It may import every internal package; nothing imports it but main.
package cli
