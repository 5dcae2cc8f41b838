package podspec

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/runtime"
)

// The cases of the kubelet's subPathExpr expansion: what only the
// container's variables tell is a ContainerConfigError, with its message.
func TestExpandSubPath(t *testing.T) {
	vars := Vars{"POD": "web", "UP": "..", "ABS": "/tmp", "EMPTY": "", "DEEP": "a/../b", "DOLLAR": "$(POD)"}
	tests := map[string]struct{ expr, want, wantErr string }{
		"a reference":                    {expr: "logs/$(POD)", want: "logs/web"},
		"no reference":                   {expr: "logs", want: "logs"},
		"escaped reference":              {expr: "$$(POD)", want: "$(POD)"},
		"a value is not expanded again":  {expr: "$(DOLLAR)", want: "$(POD)"},
		"unterminated stays":             {expr: "a$(POD", want: "a$(POD"},
		"backsteps":                      {expr: "$(UP)", wantErr: "unable to provision SubPath `..`: must not contain '..'"},
		"backsteps inside":               {expr: "x/$(DEEP)", wantErr: "unable to provision SubPath `x/a/../b`: must not contain '..'"},
		"absolute":                       {expr: "$(ABS)", wantErr: "error SubPath `/tmp` must not be an absolute path"},
		"absolute by the expression":     {expr: "/$(POD)", wantErr: "error SubPath `/web` must not be an absolute path"},
		"unknown variables, sorted once": {expr: "$(Z)/$(A)/$(Z)", wantErr: "missing value for A, Z"},
		"an empty value":                 {expr: "x/$(EMPTY)", wantErr: "missing value for EMPTY"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ExpandSubPath(&v1.VolumeMount{Name: "v", MountPath: "/m", SubPathExpr: tc.expr}, vars)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ExpandSubPath(%q) = %q, %v; want %q", tc.expr, got, err, tc.want)
				}
				return
			}
			var cfgErr *runtime.ContainerConfigError
			if !errors.As(err, &cfgErr) || cfgErr.Message != tc.wantErr {
				t.Fatalf("ExpandSubPath(%q) = %q, %v; want the ContainerConfigError %q", tc.expr, got, err, tc.wantErr)
			}
		})
	}
}
