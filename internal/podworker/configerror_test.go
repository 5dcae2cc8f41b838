package podworker

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/podward/podward/internal/runtime"
)

// The log line of a configuration error has its cause, which the message
// shown in the status may leave out.
func TestConfigLogArgs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	cause := errors.New(`volume mount "/m": subPath "out" leads out of its volume`)
	log.Warn("container configuration", configLogArgs("app", &runtime.ContainerConfigError{Message: "failed to prepare subPath", Err: cause})...)
	log.Warn("container configuration", configLogArgs("app", &runtime.ContainerConfigError{Message: `configmap "x" not found`})...)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `cause="volume mount \"/m\": subPath \"out\" leads out of its volume"`) || strings.Contains(lines[1], "cause") {
		t.Fatalf("log:\n%s\nwant the cause on the first line only", buf.String())
	}
}
