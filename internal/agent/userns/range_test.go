package userns

import (
	"strings"
	"testing"
)

func TestParseSubIDs(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    []Range
		wantErr string
	}{
		{name: "empty"},
		{name: "other users only", data: "alice:100000:65536\nbob:165536:65536\n"},
		{name: "one entry", data: "alice:100000:65536\nkubelet:65536:7208960\n", want: []Range{{65536, 7208960}}},
		{name: "comments and blanks", data: "# nodes\n\n  kubelet:131072:65536  \n", want: []Range{{131072, 65536}}},
		{name: "two entries", data: "kubelet:65536:65536\nkubelet:262144:65536\n", want: []Range{{65536, 65536}, {262144, 65536}}},
		{name: "other users' bad lines are not ours", data: "alice:x\nkubelet:65536:65536\n", want: []Range{{65536, 65536}}},
		{name: "missing field", data: "kubelet:65536\n", wantErr: "line 1"},
		{name: "extra field", data: "x:1:1\nkubelet:65536:65536:1\n", wantErr: "line 2"},
		{name: "bad first", data: "kubelet:abc:65536\n", wantErr: "first id"},
		{name: "bad count", data: "kubelet:65536:-1\n", wantErr: "count"},
		{name: "too large", data: "kubelet:4294967296:65536\n", wantErr: "first id"},
		{name: "a name that only starts like ours", data: "kubelet2:0:1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSubIDs([]byte(tt.data), "kubelet")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestNodeRange(t *testing.T) {
	tests := []struct {
		name           string
		subuid, subgid string
		want           Range
		wantErr        string
	}{
		{name: "no files: the kubelet's default", want: DefaultRange},
		{name: "no kubelet entry: the default", subuid: "alice:100000:65536\n", subgid: "alice:100000:65536\n", want: DefaultRange},
		{name: "the kubelet entry", subuid: "kubelet:65536:655360\n", subgid: "kubelet:65536:655360\n", want: Range{65536, 655360}},
		{name: "only in subuid", subuid: "kubelet:65536:655360\n", wantErr: "1 entries in /etc/subuid and 0"},
		{name: "two in subuid", subuid: "kubelet:65536:65536\nkubelet:131072:65536\n", subgid: "kubelet:65536:65536\n", wantErr: "want one in each"},
		{name: "subuid and subgid differ", subuid: "kubelet:65536:655360\n", subgid: "kubelet:131072:655360\n", wantErr: "must be the same"},
		{name: "first not aligned", subuid: "kubelet:100000:65536\n", subgid: "kubelet:100000:65536\n", wantErr: "not a multiple"},
		{name: "host ids", subuid: "kubelet:0:65536\n", subgid: "kubelet:0:65536\n", wantErr: "at least 65536"},
		{name: "length not whole blocks", subuid: "kubelet:65536:1000\n", subgid: "kubelet:65536:1000\n", wantErr: "length"},
		{name: "past the last id", subuid: "kubelet:4294901760:131072\n", subgid: "kubelet:4294901760:131072\n", wantErr: "past the last id"},
		{name: "bad line in subgid", subuid: "kubelet:65536:65536\n", subgid: "kubelet:x:65536\n", wantErr: "/etc/subgid: line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var uid, gid []byte
			if tt.subuid != "" {
				uid = []byte(tt.subuid)
			}
			if tt.subgid != "" {
				gid = []byte(tt.subgid)
			}
			got, err := NodeRange(uid, gid)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDefaultRangeIsAValidNodeRange(t *testing.T) {
	if err := DefaultRange.CheckNode(); err != nil {
		t.Fatal(err)
	}
	if got := DefaultRange.Length / BlockSize; got != 65535 {
		t.Fatalf("default range has %d blocks, want 65535", got)
	}
}
