//go:build linux

package seccomp

import (
	"fmt"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// A segment is the code for the syscall numbers above the previous
// segment's hi, up to its own hi; it ends in a return.
type segment struct {
	hi   uint32
	body []unix.SockFilter
}

// layout covers the numbers from 0 to the profile's highest in segments:
// a run of numbers with one unconditional outcome (the gaps between the
// profile's syscalls return def) is one segment of one return.
func layout(calls []call, def uint32) ([]segment, error) {
	var segs []segment
	add := func(hi uint32, body []unix.SockFilter) {
		if n := len(segs); n > 0 && len(body) == 1 && len(segs[n-1].body) == 1 && segs[n-1].body[0] == body[0] {
			segs[n-1].hi = hi
			return
		}
		segs = append(segs, segment{hi: hi, body: body})
	}
	next := uint32(0)
	for _, c := range calls {
		if c.nr > next {
			add(c.nr-1, []unix.SockFilter{ret(def)})
		}
		body, err := callBody(c, def)
		if err != nil {
			return nil, fmt.Errorf("syscall %d: %w", c.nr, err)
		}
		add(c.nr, body)
		next = c.nr + 1
	}
	return segs, nil
}

// callBody is one syscall's code: its rules in order, then def.
func callBody(c call, def uint32) ([]unix.SockFilter, error) {
	for _, r := range c.rules {
		if len(r.conds) == 0 {
			return []unix.SockFilter{ret(r.ret)}, nil
		}
	}
	var body []unix.SockFilter
	for _, r := range c.rules {
		code, err := ruleCode(r)
		if err != nil {
			return nil, err
		}
		body = append(body, code...)
	}
	return append(body, ret(def)), nil
}

// Where a condition's jump goes: on to its next instruction, past the
// condition (it holds), or past the rule (it fails).
const (
	toNext = iota
	toPass
	toFail
)

// A cinsn is an instruction of a condition, its jumps still symbolic.
type cinsn struct {
	code   uint16
	k      uint32
	jt, jf int
}

// ruleCode is a rule's code: every condition, then the rule's return. A
// condition that fails jumps past the return, to the next rule.
func ruleCode(r rule) ([]unix.SockFilter, error) {
	var ins []cinsn
	var passAt []int // for each instruction, where its condition ends
	for _, a := range r.conds {
		c := condCode[a.Op](a)
		end := len(ins) + len(c)
		for range c {
			passAt = append(passAt, end)
		}
		ins = append(ins, c...)
	}
	failAt := len(ins) + 1
	code := make([]unix.SockFilter, 0, failAt)
	for i, in := range ins {
		jt, err := offset(i, in.jt, passAt[i], failAt)
		if err != nil {
			return nil, err
		}
		jf, err := offset(i, in.jf, passAt[i], failAt)
		if err != nil {
			return nil, err
		}
		code = append(code, unix.SockFilter{Code: in.code, K: in.k, Jt: jt, Jf: jf})
	}
	return append(code, ret(r.ret)), nil
}

// offset resolves the jump target to of instruction at.
func offset(at, to, passAt, failAt int) (uint8, error) {
	target := at + 1
	switch to {
	case toPass:
		target = passAt
	case toFail:
		target = failAt
	}
	off := target - at - 1
	if off > 255 {
		return 0, fmt.Errorf("a rule of %d instructions, more than a jump spans: %w", failAt, ErrUnsupported)
	}
	return uint8(off), nil
}

// condCode gives, per operator, the code of one condition on a 64-bit
// argument, compared unsigned as libseccomp does: the high word decides
// unless it is equal, then the low word.
var condCode = map[specs.LinuxSeccompOperator]func(a specs.LinuxSeccompArg) []cinsn{
	specs.OpEqualTo: func(a specs.LinuxSeccompArg) []cinsn {
		return []cinsn{ldHi(a), jeq(hi(a.Value), toNext, toFail), ldLo(a), jeq(lo(a.Value), toPass, toFail)}
	},
	specs.OpNotEqual: func(a specs.LinuxSeccompArg) []cinsn {
		return []cinsn{ldHi(a), jeq(hi(a.Value), toNext, toPass), ldLo(a), jeq(lo(a.Value), toFail, toPass)}
	},
	specs.OpGreaterThan: func(a specs.LinuxSeccompArg) []cinsn {
		return []cinsn{ldHi(a), jgt(hi(a.Value), toPass, toNext), jeq(hi(a.Value), toNext, toFail),
			ldLo(a), jgt(lo(a.Value), toPass, toFail)}
	},
	specs.OpGreaterEqual: func(a specs.LinuxSeccompArg) []cinsn {
		return []cinsn{ldHi(a), jgt(hi(a.Value), toPass, toNext), jeq(hi(a.Value), toNext, toFail),
			ldLo(a), jge(lo(a.Value), toPass, toFail)}
	},
	specs.OpLessThan: func(a specs.LinuxSeccompArg) []cinsn {
		return []cinsn{ldHi(a), jge(hi(a.Value), toNext, toPass), jeq(hi(a.Value), toNext, toFail),
			ldLo(a), jge(lo(a.Value), toFail, toPass)}
	},
	specs.OpLessEqual: func(a specs.LinuxSeccompArg) []cinsn {
		return []cinsn{ldHi(a), jge(hi(a.Value), toNext, toPass), jeq(hi(a.Value), toNext, toFail),
			ldLo(a), jgt(lo(a.Value), toFail, toPass)}
	},
	specs.OpMaskedEqual: func(a specs.LinuxSeccompArg) []cinsn {
		return []cinsn{ldHi(a), and(hi(a.Value)), jeq(hi(a.ValueTwo), toNext, toFail),
			ldLo(a), and(lo(a.Value)), jeq(lo(a.ValueTwo), toPass, toFail)}
	},
}

func hi(v uint64) uint32 { return uint32(v >> 32) }
func lo(v uint64) uint32 { return uint32(v) }

func ldLo(a specs.LinuxSeccompArg) cinsn {
	return cinsn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArgs + 8*uint32(a.Index)}
}

func ldHi(a specs.LinuxSeccompArg) cinsn {
	return cinsn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: offArgs + 8*uint32(a.Index) + 4}
}

func and(k uint32) cinsn { return cinsn{code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, k: k} }

func jeq(k uint32, jt, jf int) cinsn {
	return cinsn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: jt, jf: jf}
}

func jgt(k uint32, jt, jf int) cinsn {
	return cinsn{code: unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, k: k, jt: jt, jf: jf}
}

func jge(k uint32, jt, jf int) cinsn {
	return cinsn{code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: k, jt: jt, jf: jf}
}

// load loads the word at off of seccomp_data.
func load(off uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
}

// jump is a conditional jump on op (BPF_JEQ, BPF_JGT, ...) against k.
func jump(op uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k, Jt: jt, Jf: jf}
}

func ret(k uint32) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k}
}
