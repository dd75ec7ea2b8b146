package runtimemetrics

import "github.com/prometheus/client_golang/prometheus"

// Counted is a kind of thing counted by state at each scrape, from its
// owner's list: the count is never kept beside the list.
type Counted struct {
	// Name and Help name the gauge; its one label is "state".
	Name, Help string
	// States are every state the thing has, so that each has a series,
	// at zero when nothing is in it.
	States []string
	// List returns the state of each thing that exists now.
	List func() []string
}

// StateCollector reports gauges of things by state, and plain gauges read
// at scrape time.
type StateCollector struct {
	counted []countedDesc
	values  []valueDesc
}

type countedDesc struct {
	c    Counted
	desc *prometheus.Desc
}

type valueDesc struct {
	read func() float64
	desc *prometheus.Desc
}

// NewStateCollector returns a collector of the kinds in counted.
func NewStateCollector(counted ...Counted) *StateCollector {
	s := &StateCollector{}
	for _, c := range counted {
		s.counted = append(s.counted, countedDesc{c: c, desc: prometheus.NewDesc(c.Name, c.Help, []string{"state"}, nil)})
	}
	return s
}

// Value adds a gauge without labels whose value read returns at each
// scrape.
func (s *StateCollector) Value(name, help string, read func() float64) *StateCollector {
	s.values = append(s.values, valueDesc{read: read, desc: prometheus.NewDesc(name, help, nil, nil)})
	return s
}

// Describe implements prometheus.Collector.
func (s *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range s.counted {
		ch <- c.desc
	}
	for _, v := range s.values {
		ch <- v.desc
	}
}

// Collect implements prometheus.Collector. A state List returns that is
// not among States is reported all the same.
func (s *StateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, c := range s.counted {
		n := make(map[string]int, len(c.c.States))
		for _, st := range c.c.States {
			n[st] = 0
		}
		for _, st := range c.c.List() {
			n[st]++
		}
		for st, count := range n {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(count), st)
		}
	}
	for _, v := range s.values {
		ch <- prometheus.MustNewConstMetric(v.desc, prometheus.GaugeValue, v.read())
	}
}
