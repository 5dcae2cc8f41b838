package prober

import "time"

// probeHeap is a min-heap of probes by their at time; each probe knows its
// index (-1 when it is not in the heap), so that it can be fixed or removed
// in O(log n).
type probeHeap []*probe

func (h probeHeap) less(i, j int) bool { return h[i].at.Before(h[j].at) }

func (h probeHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *probeHeap) push(p *probe) {
	p.index = len(*h)
	*h = append(*h, p)
	h.up(p.index)
}

// remove takes the probe at index i out of the heap.
func (h *probeHeap) remove(i int) *probe {
	old := *h
	n := len(old) - 1
	p := old[i]
	if i != n {
		old.swap(i, n)
	}
	old[n] = nil
	*h = old[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	p.index = -1
	return p
}

// set puts p in the heap at time at, or moves it there.
func (h *probeHeap) set(p *probe, at time.Time) {
	p.at = at
	if p.index < 0 {
		h.push(p)
		return
	}
	if !h.down(p.index) {
		h.up(p.index)
	}
}

func (h probeHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sifts i down and says whether it moved.
func (h probeHeap) down(i int) bool {
	start := i
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > start
}
