package model

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxListItems bounds the list items of one object of a manifest (a pod, a
// ConfigMap, a Secret; each item of a List on its own), all its lists
// together: env entries, containers, ports, volumes, args, and so on. No
// object Kubernetes can store has more: etcd refuses an object over 1.5 MiB
// (its --max-request-bytes, which the API server's storage inherits), and
// the API server stores an object in protobuf, where an item of a list
// takes at least 2 bytes (its field's tag and a length or a value, the
// lists of Kubernetes' proto2 messages being unpacked). 1.5 MiB / 2 is
// 786,432.
//
// It is checked on the JSON of each document before it is decoded into
// objects (checkListItems), so that a manifest of a million empty list
// items ("[{},{},…]" fits 3 MiB) is refused before a million structs are
// built for it.
const MaxListItems = (3 << 20) / 2 / 2

// listFrame is one open JSON array or object of checkListItems' scan.
type listFrame struct {
	array bool
	n     int    // items so far (arrays)
	key   []byte // the last key read (objects), in the document
	// want is what comes next: a key (objects) or a value (arrays).
	want bool
}

// checkListItems scans a JSON document and refuses one with an object of
// more than MaxListItems list items, naming the list in which the count
// went past the limit. It reads the bytes once and builds nothing but
// its stack; malformed JSON is left to the decoder, which reports it.
// Each item of a List (an element of a top-level "items") is an object of
// its own, and so is the List: at most MaxListItems items.
func checkListItems(js []byte) *manifestError {
	return checkListItemsUpTo(js, MaxListItems)
}

// checkListItemsUpTo is checkListItems with limit for MaxListItems.
func checkListItemsUpTo(js []byte, limit int) *manifestError {
	var stack []listFrame
	count, items := 0, 0
	for i := 0; i < len(js); i++ {
		c := js[i]
		switch c {
		case ' ', '\t', '\n', '\r', ':':
			continue
		case ',':
			if len(stack) > 0 {
				top := &stack[len(stack)-1]
				if top.array {
					top.n++
				}
				top.want = true
			}
			continue
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		// A value starts, or an object's key.
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.array && top.want {
				// A List's items are counted apart from what each holds.
				n := &count
				if isListItem(stack) {
					n = &items
				}
				if *n++; *n > limit {
					return tooManyItems(stack, limit)
				}
			}
			if c == '"' && !top.array && top.want {
				end := stringEnd(js, i)
				top.key = js[i+1 : max(end-1, i+1)]
				top.want = false
				i = end - 1
				continue
			}
			top.want = false
		}
		switch c {
		case '{', '[':
			if isListItem(stack) {
				count = 0
			}
			stack = append(stack, listFrame{array: c == '[', want: true})
		case '"':
			i = stringEnd(js, i) - 1
		}
	}
	return nil
}

// isListItem says whether a value opened now is an element of a List's
// top-level "items".
func isListItem(stack []listFrame) bool {
	return len(stack) == 2 && !stack[0].array && string(stack[0].key) == "items" && stack[1].array
}

// stringEnd is the index just past the JSON string starting at js[start],
// or len(js) when it does not end.
func stringEnd(js []byte, start int) int {
	for i := start + 1; i < len(js); i++ {
		switch js[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(js)
}

// tooManyItems is checkListItems' refusal, naming the innermost list.
func tooManyItems(stack []listFrame, limit int) *manifestError {
	var path strings.Builder
	for i := 1; i < len(stack); i++ {
		parent := stack[i-1]
		switch {
		case parent.array:
			path.WriteString("[" + strconv.Itoa(parent.n) + "]")
		case path.Len() == 0:
			path.Write(parent.key)
		default:
			path.WriteString(".")
			path.Write(parent.key)
		}
	}
	return &manifestError{msg: fmt.Sprintf("%s: Too many: more than %d list items in one object: no object this large fits in etcd's 1.5 MiB limit on an object (an item takes at least 2 bytes stored)", path.String(), limit)}
}
