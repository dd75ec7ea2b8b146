package source

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// object is one decoded manifest object; exactly one pointer is set.
type object struct {
	doc       int // 1-based document number in its file
	multiDoc  bool
	item      int // index in a List, -1 when not in one
	pod       *corev1.Pod
	configMap *corev1.ConfigMap
	secret    *corev1.Secret
}

func (o object) meta() *metav1.ObjectMeta {
	switch {
	case o.pod != nil:
		return &o.pod.ObjectMeta
	case o.configMap != nil:
		return &o.configMap.ObjectMeta
	default:
		return &o.secret.ObjectMeta
	}
}

func (o object) kind() string {
	switch {
	case o.pod != nil:
		return "pod"
	case o.configMap != nil:
		return "configmap"
	default:
		return "secret"
	}
}

func (o object) key() string { return Key(o.meta().Namespace, o.meta().Name) }

// describe names the object for an error message: `pod "web"`, or where it
// is when it has no name.
func (o object) describe() string {
	if name := o.meta().Name; name != "" {
		return fmt.Sprintf("%s %q", o.kind(), name)
	}
	return o.kind() + " " + location(o.doc, o.multiDoc, o.item)
}

func location(doc int, multiDoc bool, item int) string {
	var parts []string
	if multiDoc {
		parts = append(parts, fmt.Sprintf("document %d", doc))
	}
	if item >= 0 {
		parts = append(parts, fmt.Sprintf("items[%d]", item))
	}
	if len(parts) == 0 {
		return "(unnamed)"
	}
	return "at " + strings.Join(parts, ", ")
}

// typeMeta is read first, leniently, to choose the type to decode into.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// list is a List, PodList, ConfigMapList or SecretList.
type list struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ListMeta   `json:"metadata"`
	Items      []json.RawMessage `json:"items"`
}

// itemKinds maps a list kind to the kind its items default to ("" for
// List, whose items must name their kind).
var itemKinds = map[string]string{
	"List":          "",
	"PodList":       "Pod",
	"ConfigMapList": "ConfigMap",
	"SecretList":    "Secret",
}

// decodeFile splits a file into documents and decodes each strictly. Any
// bad document fails the whole file; the error says which document when
// the file has several.
func decodeFile(data []byte, isJSON bool) ([]object, error) {
	var docs []document
	var err error
	if isJSON {
		docs, err = splitJSON(data)
	} else {
		docs, err = splitYAML(data)
	}
	if err != nil {
		return nil, err
	}
	multi := len(docs) > 1
	var objs []object
	var errs []error
	for i, doc := range docs {
		got, err := decodeDocument(doc, isJSON, i+1, multi)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, got...)
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return objs, nil
}

func decodeDocument(doc document, isJSON bool, n int, multi bool) ([]object, error) {
	prefix := ""
	if multi {
		prefix = fmt.Sprintf("document %d: ", n)
	}
	js := doc.data
	if !isJSON {
		var err error
		js, err = yaml.YAMLToJSONStrict(doc.data)
		if err != nil {
			return nil, invalidf("%s%s", prefix, fileLines(oneLine(err.Error()), doc.line))
		}
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || bytes.Equal(js, []byte("null")) {
		return nil, nil // an empty document, e.g. after a trailing ---
	}
	var tm typeMeta
	if js[0] != '{' || json.Unmarshal(js, &tm) != nil {
		return nil, invalidf("%sdocument is not an object", prefix)
	}
	if items, isList := itemKinds[tm.Kind]; isList {
		if err := checkAPIVersion(tm.APIVersion, false); err != nil {
			return nil, invalidf("%s%s: %v", prefix, tm.Kind, err)
		}
		var l list
		if err := strictUnmarshal(js, &l); err != nil {
			return nil, invalidf("%s%s: %v", prefix, tm.Kind, err)
		}
		var objs []object
		for i, raw := range l.Items {
			o, err := decodeObject(raw, items, object{doc: n, multiDoc: multi, item: i})
			if err != nil {
				return nil, err
			}
			objs = append(objs, o)
		}
		return objs, nil
	}
	o, err := decodeObject(js, "", object{doc: n, multiDoc: multi, item: -1})
	if err != nil {
		return nil, err
	}
	return []object{o}, nil
}

// decodeObject decodes one Pod, ConfigMap or Secret. impliedKind is the
// kind of a typed list's items, which may omit apiVersion and kind.
func decodeObject(js []byte, impliedKind string, o object) (object, error) {
	where := location(o.doc, o.multiDoc, o.item)
	var tm typeMeta
	if len(js) == 0 || js[0] != '{' || json.Unmarshal(js, &tm) != nil {
		return o, invalidf("object %s: not an object", where)
	}
	kind := tm.Kind
	if kind == "" {
		kind = impliedKind
	}
	if impliedKind != "" && kind != impliedKind {
		return o, invalidf("object %s: kind: unsupported value %q: must be %q in a %sList", where, tm.Kind, impliedKind, impliedKind)
	}
	if err := checkAPIVersion(tm.APIVersion, impliedKind != ""); err != nil {
		return o, invalidf("object %s: %v", where, err)
	}
	var target any
	switch kind {
	case "Pod":
		o.pod = &corev1.Pod{}
		target = o.pod
	case "ConfigMap":
		o.configMap = &corev1.ConfigMap{}
		target = o.configMap
	case "Secret":
		o.secret = &corev1.Secret{}
		target = o.secret
	case "":
		return o, invalidf("object %s: kind: required value", where)
	default:
		return o, invalidf("object %s: kind: unsupported value %q: supported values: \"Pod\", \"ConfigMap\", \"Secret\", \"List\", \"PodList\", \"ConfigMapList\", \"SecretList\"", where, kind)
	}
	if err := strictUnmarshal(js, target); err != nil {
		return o, invalidf("%s: %v", o.describe(), err)
	}
	// A typed list's items may leave these out; fill them so that every
	// object in a snapshot looks the same.
	switch {
	case o.pod != nil:
		o.pod.APIVersion, o.pod.Kind = "v1", "Pod"
	case o.configMap != nil:
		o.configMap.APIVersion, o.configMap.Kind = "v1", "ConfigMap"
	case o.secret != nil:
		o.secret.APIVersion, o.secret.Kind = "v1", "Secret"
	}
	return o, nil
}

func checkAPIVersion(v string, mayBeEmpty bool) error {
	switch {
	case v == "v1":
		return nil
	case v == "" && mayBeEmpty:
		return nil
	case v == "":
		return errors.New("apiVersion: required value")
	default:
		return fmt.Errorf("apiVersion: unsupported value %q: must be \"v1\"", v)
	}
}

// strictUnmarshal decodes JSON into a typed object case-sensitively and
// fails on unknown or duplicate fields, naming their full path, e.g.
// `unknown field "spec.containers[0].imagee"`.
func strictUnmarshal(js []byte, into any) error {
	strict, err := kjson.UnmarshalStrict(js, into)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return joinErrors(strict)
	}
	return nil
}

// document is one YAML document or JSON value of a file.
type document struct {
	data []byte
	line int // 1-based line of the file where it starts
}

// splitYAML cuts a YAML stream at lines that start with "---" followed by
// nothing but blanks or a comment. Documents that hold only blanks and
// comments are dropped, so that a leading or trailing separator does not
// count as a document.
func splitYAML(data []byte) ([]document, error) {
	var docs []document
	cur := document{line: 1}
	r := bufio.NewReader(bytes.NewReader(data))
	for line := 1; ; line++ {
		text, err := r.ReadBytes('\n')
		if isSeparator(text) {
			if !blankYAML(cur.data) {
				docs = append(docs, cur)
			}
			cur = document{line: line + 1}
		} else {
			cur.data = append(cur.data, text...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, invalidf("read yaml: %v", err)
		}
	}
	if !blankYAML(cur.data) {
		docs = append(docs, cur)
	}
	return docs, nil
}

func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := bytes.TrimSpace(line[3:])
	return len(rest) == 0 || rest[0] == '#'
}

func blankYAML(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
}

// splitJSON reads a stream of JSON values (usually one).
func splitJSON(data []byte) ([]document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []document
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, invalidf("json: %v", err)
		}
		docs = append(docs, document{data: raw})
	}
}

// oneLine folds yaml's multi-line error lists ("unmarshal errors:\n  line
// 5: ...") onto one line.
func oneLine(msg string) string {
	return strings.Join(strings.Fields(msg), " ")
}

var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// fileLines turns yaml's line numbers, which count from the start of the
// document, into line numbers of the file.
func fileLines(msg string, start int) string {
	if start <= 1 {
		return msg
	}
	return yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return fmt.Sprintf("line %d", n+start-1)
	})
}
