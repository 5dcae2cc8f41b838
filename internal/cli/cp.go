package cli

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/podward/podward/internal/client"
)

type cpOptions struct {
	container  string
	noPreserve bool
}

func newCpCommand(s Streams, api *apiOptions) *cobra.Command {
	var o cpOptions
	cmd := &cobra.Command{
		Use:   "cp SRC DEST",
		Short: "Copy files to and from a container",
		Long: `Cp copies a file or a directory between this machine and a container, as kubectl cp
does: one of SRC and DEST is local, the other [NAMESPACE/]POD:PATH. It runs tar in
the container over an exec (tar must be in the container's PATH): 'tar -xmf -' to
copy in, 'tar cf -' to copy out. Copying into an existing directory puts SRC
inside it. Symbolic links are skipped when copying out, with a warning.`,
		Example: `  podward cp ./config.yaml web:/etc/app/config.yaml
  podward cp web:/var/log/app ./app-logs -c sidecar
  podward cp other-ns/web:/tmp/out.txt out.txt`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError(errors.New("source and destination are required"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCp(cmd.Context(), s, api, o, args[0], args[1])
		},
	}
	cmd.Flags().StringVarP(&o.container, "container", "c", "", "the container; defaults to the pod's default container")
	cmd.Flags().BoolVar(&o.noPreserve, "no-preserve", false, "the copied files' ownership and permissions are not preserved in the container")
	return cmd
}

// fileSpec is one side of a copy: a local path, or a path in a pod.
type fileSpec struct {
	namespace, pod string
	file           string
}

// parseFileSpec reads kubectl cp's file specification: PATH, POD:PATH or
// NAMESPACE/POD:PATH.
func parseFileSpec(arg string) (fileSpec, error) {
	i := strings.Index(arg, ":")
	if i == 0 {
		return fileSpec{}, errors.New("filespec must match the canonical format: [[namespace/]pod:]file/path")
	}
	if i < 0 {
		return fileSpec{file: arg}, nil
	}
	pod, file := arg[:i], arg[i+1:]
	switch pieces := strings.Split(pod, "/"); len(pieces) {
	case 1:
		return fileSpec{pod: pieces[0], file: file}, nil
	case 2:
		return fileSpec{namespace: pieces[0], pod: pieces[1], file: file}, nil
	default:
		return fileSpec{}, errors.New("filespec must match the canonical format: [[namespace/]pod:]file/path")
	}
}

func runCp(ctx context.Context, s Streams, api *apiOptions, o cpOptions, srcArg, destArg string) error {
	src, err := parseFileSpec(srcArg)
	if err == nil {
		var dest fileSpec
		if dest, err = parseFileSpec(destArg); err == nil {
			err = checkCp(src, dest)
			if err == nil {
				return copyFiles(ctx, s, api, o, src, dest)
			}
		}
	}
	fmt.Fprintln(s.Err, "error:", err)
	return &ExitError{Code: ExitFailed}
}

// checkCp checks that one side is local and the other in a pod.
func checkCp(src, dest fileSpec) error {
	switch {
	case src.pod != "" && dest.pod != "":
		return errors.New("one of src or dest must be a local file specification")
	case src.file == "" || dest.file == "":
		return errors.New("filepath can not be empty")
	case src.pod == "" && dest.pod == "":
		return errors.New("one of src or dest must be a remote file specification")
	}
	return nil
}

// copyFiles resolves the pod's container and copies.
func copyFiles(ctx context.Context, s Streams, api *apiOptions, o cpOptions, src, dest fileSpec) error {
	remote := dest
	if src.pod != "" {
		remote = src
	}
	ns := api.namespace
	if remote.namespace != "" {
		ns = remote.namespace
	}
	c := api.client()
	defer c.Close()
	pod, err := c.GetPod(ctx, ns, remote.pod)
	if err != nil {
		return report(s, err)
	}
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		fmt.Fprintf(s.Err, "error: cannot exec into a container in a completed pod; current phase is %s\n", pod.Status.Phase)
		return &ExitError{Code: ExitFailed}
	}
	container, err := execContainer(pod, o.container, false, s.Err)
	if err != nil {
		fmt.Fprintln(s.Err, "error:", err)
		return &ExitError{Code: ExitFailed}
	}
	cp := &copier{s: s, c: c, ns: ns, pod: remote.pod, container: container}
	if src.pod != "" {
		err = cp.fromPod(ctx, src.file, dest.file)
	} else {
		err = cp.toPod(ctx, src.file, dest.file, o.noPreserve)
	}
	return remoteResult(s, err)
}

// copier copies through execs in one container.
type copier struct {
	s                  Streams
	c                  *client.Client
	ns, pod, container string
}

func (cp *copier) exec(ctx context.Context, cmd []string, streams remotecommand.StreamOptions) error {
	opts := v1.PodExecOptions{Container: cp.container, Command: cmd, Stdin: streams.Stdin != nil, Stdout: streams.Stdout != nil, Stderr: streams.Stderr != nil}
	return cp.c.Exec(ctx, cp.ns, cp.pod, opts, streams)
}

// toPod copies local src to dest in the container, as kubectl's
// copyToPod: into dest when it is a directory there, else as dest.
func (cp *copier) toPod(ctx context.Context, src, dest string, noPreserve bool) error {
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("%s doesn't exist in local filesystem", src)
	}
	dest = path.Clean(dest)
	isDir := cp.exec(ctx, []string{"test", "-d", dest}, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
	if isDir == nil {
		dest = path.Join(dest, filepath.Base(filepath.Clean(src)))
	} else if ctx.Err() != nil {
		return ctx.Err()
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeTar(filepath.Clean(src), path.Base(dest), pw))
	}()
	cmd := []string{"tar", "-xmf", "-"}
	if noPreserve {
		cmd = []string{"tar", "--no-same-permissions", "--no-same-owner", "-xmf", "-"}
	}
	if dir := path.Dir(dest); dir != "" {
		cmd = append(cmd, "-C", dir)
	}
	err := cp.exec(ctx, cmd, remotecommand.StreamOptions{Stdin: pr, Stdout: cp.s.Out, Stderr: cp.s.Err})
	pr.Close()
	return err
}

// writeTar writes src (a file, a directory with what is below it, or a
// symbolic link) to w as a tar whose names start with name.
func writeTar(src, name string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		entry := path.Join(name, filepath.ToSlash(rel))
		link := ""
		if fi.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = entry
		if fi.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// fromPod copies src in the container to local dest, as kubectl's
// copyFromPod: `tar cf - SRC` there, unpacked here with SRC's path
// stripped, so that a file becomes dest and a directory's content goes
// below dest. tar's own messages go to stdout, as kubectl has them.
func (cp *copier) fromPod(ctx context.Context, src, dest string) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := cp.exec(ctx, []string{"tar", "cf", "-", src}, remotecommand.StreamOptions{Stdout: pw, Stderr: cp.s.Out})
		pw.CloseWithError(err)
		done <- err
	}()
	prefix := stripPathShortcuts(strings.TrimLeft(path.Clean(src), "/"))
	err := untar(cp.s.Err, pr, prefix, dest)
	if err == nil {
		// tar pads its end: read it all, so that the exec ends on its own.
		_, err = io.Copy(io.Discard, pr)
	}
	pr.CloseWithError(errors.New("copy ended"))
	execErr := <-done
	if execErr != nil {
		return execErr
	}
	return err
}

// untar unpacks r below dest, each name with prefix removed; a name
// without it means the stream was tampered with. A name that would land
// outside dest, or a symbolic link, is skipped with a warning on warn.
func untar(warn io.Writer, r io.Reader, prefix, dest string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if !strings.HasPrefix(hdr.Name, prefix) {
			return errors.New("tar contents corrupted")
		}
		target := filepath.Join(dest, filepath.FromSlash(path.Clean("/"+hdr.Name[len(prefix):])))
		if rel, err := filepath.Rel(filepath.Clean(dest), target); err != nil || strings.HasPrefix(rel, "..") {
			fmt.Fprintf(warn, "warning: file %q is outside target destination, skipping\n", target)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		mode := hdr.FileInfo().Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case mode&os.ModeSymlink != 0:
			fmt.Fprintf(warn, "warning: skipping symlink: %q -> %q\n", target, hdr.Linkname)
		default:
			if err := writeFile(target, tr); err != nil {
				return err
			}
		}
	}
}

func writeFile(name string, r io.Reader) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stripPathShortcuts removes the leading "../" of p, and a leftover "."
// or "..", as kubectl does, so that the prefix matches tar's names.
func stripPathShortcuts(p string) string {
	for strings.HasPrefix(p, "../") {
		p = strings.TrimPrefix(p, "../")
	}
	if p == "." || p == ".." {
		return ""
	}
	return strings.TrimPrefix(p, "/")
}
