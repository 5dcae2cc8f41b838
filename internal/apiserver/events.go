package apiserver

import (
	"net/http"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// listEvents serves GET .../events: an EventList of the kept events, oldest
// first per pod, or with watch=true a stream of an ADDED event for every
// event recorded from now on (the kept ones are not replayed: list them),
// MODIFIED for a repeat counted in its series' event (its count above 1).
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	q := r.URL.Query()
	sel, err := parseSelector(q, eventFieldLabels)
	if err != nil {
		return err
	}
	watch, err := boolParam(q, "watch")
	if err != nil {
		return err
	}
	if watch {
		// Subscribe before the response starts, so that a client that
		// lists once the stream has started misses nothing.
		ch := s.b.WatchEvents(r.Context(), ns)
		st, err := startStream(w)
		if err != nil {
			return err
		}
		for e := range ch {
			if !sel.matchesEvent(&e) {
				continue
			}
			// A repeat of an event of a series is that event, changed.
			typ := "ADDED"
			if e.Count > 1 {
				typ = "MODIFIED"
			}
			if err := st.send(typ, eventObject(e)); err != nil {
				return err
			}
		}
		return nil
	}
	list := &v1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: []v1.Event{}}
	for _, e := range s.b.ListEvents(ns, "") {
		if sel.matchesEvent(&e) {
			list.Items = append(list.Items, e)
		}
	}
	return writeJSON(w, http.StatusOK, list)
}

func eventObject(e v1.Event) *v1.Event {
	e.Kind, e.APIVersion = "Event", "v1"
	return &e
}
