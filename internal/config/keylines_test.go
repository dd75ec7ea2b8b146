package config

import (
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
)

func TestScanKeys(t *testing.T) {
	type stmt struct {
		Key       string
		Line, End int
		Header    bool
	}
	tests := []struct {
		name string
		doc  string
		want []stmt
	}{
		{"keys and tables", "# c\nroot = \"/x\"\n\n[network]\nbridge = \"b\" # [not] a = 1\n", []stmt{
			{"root", 2, 2, false}, {"network", 4, 4, true}, {"network.bridge", 5, 5, false},
		}},
		{"dotted and quoted keys", "network.bridge = 'b'\n[registries.\"a.b:5000\"]\n  mirrors = [\"http://m\"]\n\"x=y\" . 'z' = 1\n", []stmt{
			{"network.bridge", 1, 1, false}, {`registries."a.b:5000"`, 2, 2, true},
			{`registries."a.b:5000".mirrors`, 3, 3, false}, {`registries."a.b:5000"."x=y".z`, 4, 4, false},
		}},
		{"escapes in a quoted key", "[registries.\"\\u0061\"]\ninsecure = true\n", []stmt{
			{"registries.a", 1, 1, true}, {"registries.a.insecure", 2, 2, false},
		}},
		{"array over lines with comments and brackets in strings", "a = [\n  \"]\", # ] x = 1\n  '[',\n]\nb = 2\n", []stmt{
			{"a", 1, 4, false}, {"b", 5, 5, false},
		}},
		{"multi-line strings hide keys", "s = \"\"\"\nx = 1\n[t]\n\\\"\"\" \"\"\"\"\"\nl = '''\ny = 2'''''\nz = 3\n", []stmt{
			{"s", 1, 4, false}, {"l", 5, 6, false}, {"z", 7, 7, false},
		}},
		{"inline table", "[runtimes]\nrunc = { path = \"runc\", root = \"}\" }\nq = 1\n", []stmt{
			{"runtimes", 1, 1, true}, {"runtimes.runc", 2, 2, false}, {"runtimes.q", 3, 3, false},
		}},
		{"array of tables and CRLF", "[[a]]\r\nb = 1\r\n[[a]]\r\nb = 2\r\n", []stmt{
			{"a", 1, 1, true}, {"a.b", 2, 2, false}, {"a", 3, 3, true}, {"a.b", 4, 4, false},
		}},
		{"no final newline", "\uFEFFa = 1", []stmt{{"a", 1, 1, false}}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The scanner's input is a document the parser accepted.
			var m map[string]any
			if _, err := toml.Decode(tt.doc, &m); err != nil {
				t.Fatalf("test document: %v", err)
			}
			stmts, err := scanKeys(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			var got []stmt
			for _, s := range stmts {
				got = append(got, stmt{s.key.String(), s.line, s.end, s.header})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scanKeys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeyLinesOf(t *testing.T) {
	doc := "a = 1\n[net]\nx.y = 2\n[rt]\nrunc = { path = \"p\" }\n"
	stmts, err := scanKeys(doc)
	if err != nil {
		t.Fatal(err)
	}
	lines := newKeyLines(stmts)
	for _, tt := range []struct {
		key  toml.Key
		want int
	}{
		{toml.Key{"a"}, 1},
		{toml.Key{"net"}, 2},
		{toml.Key{"net", "x"}, 3},
		{toml.Key{"net", "x", "y"}, 3},
		{toml.Key{"rt", "runc", "path"}, 5}, // inside an inline table: its key's line
		{toml.Key{"nope"}, 0},
	} {
		if got := lines.of(tt.key); got != tt.want {
			t.Errorf("line of %s = %d, want %d", tt.key, got, tt.want)
		}
	}
}

// libraryLines reads the lines BurntSushi/toml recorded for the keys of md
// from its unexported fields: an oracle for tests only. ok is false when
// this version of the library keeps them elsewhere.
func libraryLines(md toml.MetaData) (lines map[string]int, ok bool) {
	info := reflect.ValueOf(md).FieldByName("keyInfo")
	if info.Kind() != reflect.Map {
		return nil, false
	}
	lines = map[string]int{}
	iter := info.MapRange()
	for iter.Next() {
		pos := iter.Value().FieldByName("pos")
		if !pos.IsValid() {
			return nil, false
		}
		lines[iter.Key().String()] = int(pos.FieldByName("Line").Int())
	}
	return lines, true
}

// FuzzScanKeys checks the scanner against the parser: for a document the
// parser accepts, every key a statement defines is on the line the parser
// says, and every key the parser knows has a line.
func FuzzScanKeys(f *testing.F) {
	for _, seed := range []string{
		"a = 1\n[b]\nc.d = 'x'\n",
		"s = \"\"\"\nx = 1\n\"\"\"\n[t] # c\n'q.r' = [1,\n2]\n",
		"[[a]]\nb = {c = 1}\n[[a]]\nb = {c = 2}\n",
		"a = '''\n[x]\n'''''\nb = \"\\\"=\"\n",
		"x = [ # ]\n  \"]\",\n]\ny = { z = \"}\" }\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var m map[string]any
		md, err := toml.Decode(doc, &m)
		if err != nil {
			return
		}
		oracle, ok := libraryLines(md)
		if !ok {
			t.Skip("this BurntSushi/toml keeps key positions elsewhere")
		}
		stmts, err := scanKeys(doc)
		if err != nil {
			t.Fatalf("scanKeys: %v", err)
		}
		lines := newKeyLines(stmts)
		count := map[string]int{}
		for _, st := range stmts {
			count[st.key.String()]++
		}
		for _, st := range stmts {
			k := st.key.String()
			if count[k] > 1 {
				continue // an array of tables: the parser keeps the last
			}
			// The parser places a key on its line or, with a value over
			// several lines, where the value ends.
			if want, ok := oracle[k]; ok && (want < st.line || want > st.end) {
				t.Errorf("%s on lines %d-%d, parser says %d\ndocument:\n%s", k, st.line, st.end, want, doc)
			}
		}
		for _, k := range md.Keys() {
			if lines.of(k) == 0 {
				t.Errorf("no line for key %s\ndocument:\n%s", k, doc)
			}
		}
	})
}
