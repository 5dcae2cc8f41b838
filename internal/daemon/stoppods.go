package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/podward/podward/internal/runtime/process"
)

// ErrAgentRuns is StopPods' error while an agent runs on the state
// directory: that agent stops its pods itself (podward shutdown).
var ErrAgentRuns = errors.New("an agent runs on the state directory")

// StopPods stops, each pod in its order, the process-runtime containers
// the agents on the state directory root ("" for DefaultStateDir) left
// running, while no agent runs there (process.StopLeft): for an init
// system, before it signals every process of the machine. The CRI
// runtime's containers are not its business (their runtime stops them).
func StopPods(ctx context.Context, root string) (process.LeftStop, error) {
	if root == "" {
		root = DefaultStateDir()
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return process.LeftStop{}, badOptions(err)
	}
	res, err := process.StopLeft(ctx, filepath.Join(root, "process"))
	if errors.Is(err, process.ErrRootInUse) {
		return res, fmt.Errorf("%w (%s): it stops its pods itself, with podward shutdown", ErrAgentRuns, root)
	}
	return res, err
}
