package cri_test

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/podworker"
	"github.com/podward/podward/internal/runtime/cri"
)

// The CRI runtime is a drop-in for the process runtime: the interfaces its
// consumers declare.
var (
	_ podworker.Runtime         = (*cri.Runtime)(nil)
	_ podworker.ImageService    = (*cri.Runtime)(nil)
	_ podworker.GracefulStopper = (*cri.Runtime)(nil)
	_ podworker.Lister          = (*cri.Runtime)(nil)
	_ agent.Runtime             = (*cri.Runtime)(nil)
	_ interface {
		ListPods() ([]types.UID, error) // the agent's pod lister
		Close() error
		Version(ctx context.Context) (string, string, error)
		Status(ctx context.Context) error
	} = (*cri.Runtime)(nil)
)
