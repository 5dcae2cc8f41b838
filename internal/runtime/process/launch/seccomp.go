package launch

import (
	"fmt"

	"github.com/podward/podward/internal/runtime/seccomp"
)

// installSeccomp installs s's seccomp filter on the calling thread, whose
// capabilities (CAP_SYS_ADMIN) or no_new_privs allow it.
func installSeccomp(s *Security) error {
	switch s.Seccomp {
	case "":
		return nil
	case SeccompRuntimeDefault:
		f, err := seccomp.RuntimeDefault(s.Capabilities)
		if err != nil {
			return fmt.Errorf("seccomp profile RuntimeDefault: %w", err)
		}
		if err := f.Install(); err != nil {
			return fmt.Errorf("install the seccomp profile RuntimeDefault: %w", err)
		}
		return nil
	}
	return fmt.Errorf("seccomp profile %q: unknown", s.Seccomp)
}
