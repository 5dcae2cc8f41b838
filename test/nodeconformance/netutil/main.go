// Command netutil is the nc and the curl of the agnhost image that
// hack/e2e-images.sh builds for `make node-conformance`. Upstream's agnhost
// image is Alpine with netcat-openbsd and curl, and the e2e specs run both in
// it; the image built here is Debian's busybox-static, whose nc has no -u and
// whose static wget crashes in host-network pods. One static binary, linked as
// /usr/bin/nc and /usr/bin/curl, does what the specs ask of them, and no more:
//
//	nc [-u] [-w SECONDS] [-v] [-z] HOST PORT
//	  stdin to the peer (one datagram with -u), the answer to stdout until
//	  SECONDS of silence (default: until the peer closes; 1 s with -u)
//	curl [-g] [-q] [-s] [-S] [-k] [-f] [-I] [-o FILE] [-w FORMAT]
//	     [-m|--max-time SECONDS] [--connect-timeout SECONDS] URL
//	  a GET (HEAD with -I) of URL; -w knows %{http_code}; exit status as
//	  curl's: 0 when an answer came (22 for >= 400 with -f), 6 when the host
//	  is unknown, 7 when the connection failed, 28 on a timeout
package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	var code int
	if filepath.Base(os.Args[0]) == "curl" {
		code = curl(os.Args[1:], os.Stdout, os.Stderr)
	} else {
		code = nc(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	os.Exit(code)
}

// seconds parses a duration given in (possibly fractional) seconds.
func seconds(s string) (time.Duration, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("bad number of seconds %q", s)
	}
	return time.Duration(f * float64(time.Second)), nil
}

type ncArgs struct {
	udp, verbose, zero bool
	wait               time.Duration
	host, port         string
}

func parseNC(args []string) (ncArgs, error) {
	var a ncArgs
	var rest []string
	for i := 0; i < len(args); i++ {
		switch arg := args[i]; arg {
		case "-u":
			a.udp = true
		case "-v":
			a.verbose = true
		case "-z":
			a.zero = true
		case "-w":
			if i+1 == len(args) {
				return a, errors.New("-w needs a number of seconds")
			}
			i++
			d, err := seconds(args[i])
			if err != nil {
				return a, err
			}
			a.wait = d
		default:
			if strings.HasPrefix(arg, "-") {
				return a, fmt.Errorf("unsupported option %s", arg)
			}
			rest = append(rest, arg)
		}
	}
	if len(rest) != 2 {
		return a, errors.New("usage: nc [-u] [-w SECONDS] [-v] [-z] HOST PORT")
	}
	a.host, a.port = rest[0], rest[1]
	if a.udp && a.wait == 0 {
		a.wait = time.Second
	}
	return a, nil
}

func nc(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a, err := parseNC(args)
	if err != nil {
		fmt.Fprintln(stderr, "nc:", err)
		return 2
	}
	network := "tcp"
	if a.udp {
		network = "udp"
	}
	dialTimeout := a.wait
	if dialTimeout == 0 {
		dialTimeout = 30 * time.Second
	}
	conn, err := net.DialTimeout(network, net.JoinHostPort(a.host, a.port), dialTimeout)
	if err != nil {
		fmt.Fprintln(stderr, "nc:", err)
		return 1
	}
	defer conn.Close()
	if a.verbose {
		fmt.Fprintf(stderr, "nc: connected to %s\n", conn.RemoteAddr())
	}
	if a.zero {
		return 0
	}
	if a.udp {
		msg, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
		if err != nil {
			fmt.Fprintln(stderr, "nc:", err)
			return 1
		}
		if _, err := conn.Write(msg); err != nil {
			fmt.Fprintln(stderr, "nc:", err)
			return 1
		}
	} else {
		go func() {
			_, _ = io.Copy(conn, stdin)
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
		}()
	}
	buf := make([]byte, 64<<10)
	for {
		if a.wait > 0 {
			_ = conn.SetReadDeadline(time.Now().Add(a.wait))
		}
		n, err := conn.Read(buf)
		if n > 0 {
			if _, werr := stdout.Write(buf[:n]); werr != nil {
				return 1
			}
		}
		if err != nil {
			var ne net.Error
			if errors.Is(err, io.EOF) || (errors.As(err, &ne) && ne.Timeout()) {
				return 0
			}
			fmt.Fprintln(stderr, "nc:", err)
			return 1
		}
	}
}

type curlArgs struct {
	url, out, format             string
	head, insecure, fail, silent bool
	maxTime, connectTimeout      time.Duration
}

func parseCurl(args []string) (curlArgs, error) {
	a := curlArgs{out: "-", maxTime: 0, connectTimeout: 30 * time.Second}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		value := func() (string, error) {
			if i+1 == len(args) {
				return "", fmt.Errorf("%s needs a value", arg)
			}
			i++
			return args[i], nil
		}
		var err error
		switch arg {
		case "-g", "-q", "-S", "--globoff":
		case "-s", "--silent":
			a.silent = true
		case "-k", "--insecure":
			a.insecure = true
		case "-f", "--fail":
			a.fail = true
		case "-I", "--head":
			a.head = true
		case "-sk", "-ks":
			a.silent, a.insecure = true, true
		case "-o", "--output":
			a.out, err = value()
		case "-w", "--write-out":
			a.format, err = value()
		case "-m", "--max-time", "--connect-timeout":
			var v string
			if v, err = value(); err == nil {
				var d time.Duration
				if d, err = seconds(v); err == nil {
					if arg == "--connect-timeout" {
						a.connectTimeout = d
					} else {
						a.maxTime = d
					}
				}
			}
		default:
			if strings.HasPrefix(arg, "-") {
				return a, fmt.Errorf("unsupported option %s", arg)
			}
			if a.url != "" {
				return a, errors.New("more than one URL")
			}
			a.url = arg
		}
		if err != nil {
			return a, err
		}
	}
	if a.url == "" {
		return a, errors.New("no URL")
	}
	if !strings.Contains(a.url, "://") {
		a.url = "http://" + a.url
	}
	return a, nil
}

// curl exit statuses (curl(1), EXIT CODES)
const (
	curlUsage       = 2
	curlUnknownHost = 6
	curlNoConnect   = 7
	curlHTTPError   = 22
	curlWriteError  = 23
	curlTimeout     = 28
	curlOther       = 56
)

func curl(args []string, stdout, stderr io.Writer) int {
	a, err := parseCurl(args)
	if err != nil {
		fmt.Fprintln(stderr, "curl:", err)
		return curlUsage
	}
	client := &http.Client{
		Timeout: a.maxTime,
		Transport: &http.Transport{
			DialContext:     (&net.Dialer{Timeout: a.connectTimeout}).DialContext,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: a.insecure}, //nolint:gosec // -k asks for it
		},
		// curl does not follow redirects without -L
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	method := http.MethodGet
	if a.head {
		method = http.MethodHead
	}
	req, err := http.NewRequest(method, a.url, nil)
	if err != nil {
		fmt.Fprintln(stderr, "curl:", err)
		return curlUsage
	}
	req.Header.Set("User-Agent", "curl/netutil")
	resp, err := client.Do(req)
	if err != nil {
		if !a.silent {
			fmt.Fprintln(stderr, "curl:", err)
		}
		return curlFailure(err)
	}
	defer resp.Body.Close()
	var out io.Writer = stdout
	if a.out != "-" {
		f, err := os.Create(a.out)
		if err != nil {
			fmt.Fprintln(stderr, "curl:", err)
			return curlWriteError
		}
		defer f.Close()
		out = f
	}
	if a.head {
		fmt.Fprintf(out, "%s %s\r\n", resp.Proto, resp.Status)
		_ = resp.Header.Write(out)
		fmt.Fprint(out, "\r\n")
	} else if _, err := io.Copy(out, resp.Body); err != nil {
		return curlFailure(err)
	}
	if a.format != "" {
		fmt.Fprint(stdout, strings.NewReplacer(`%{http_code}`, fmt.Sprintf("%03d", resp.StatusCode), `\n`, "\n").Replace(a.format))
	}
	if a.fail && resp.StatusCode >= 400 {
		return curlHTTPError
	}
	return 0
}

func curlFailure(err error) int {
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dnsErr):
		return curlUnknownHost
	case errors.As(err, &ne) && ne.Timeout():
		return curlTimeout
	case errors.Is(err, io.ErrUnexpectedEOF):
		return curlOther
	default:
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return curlNoConnect
		}
		return curlOther
	}
}
