package chronolog

import (
	"slices"
	"testing"
)

func TestManifestReadLists(t *testing.T) {
	p := &Plugin{
		Name:       "shop",
		Events:     map[string]EventType{"order.audited": {Read: []string{"auditor"}}, "order.placed": {Allow: []string{"*"}}},
		Processors: map[string]Processor{"fulfil": {On: []string{"order.placed"}, Read: []string{"role:client"}}},
		Actions:    map[string]Action{"charge": {Read: []string{"auditor", "ops"}}, "refund": {}},
	}
	m, err := p.manifest()
	if err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string][]string{
		"order.audited": m.Events["order.audited"].Read,
		"order.placed":  m.Events["order.placed"].Read,
		"fulfil":        m.Processors["fulfil"].Read,
		"charge":        m.Actions["charge"].Read,
		"refund":        m.Actions["refund"].Read,
	} {
		want := map[string][]string{"order.audited": {"auditor"}, "fulfil": {"role:client"}, "charge": {"auditor", "ops"}}[what]
		if !slices.Equal(got, want) {
			t.Errorf("%s: read %v, want %v", what, got, want)
		}
	}
}
