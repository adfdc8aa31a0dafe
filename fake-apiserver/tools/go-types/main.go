// Command go-types writes go_types.json: how Go's encoding/json writes every type of the
// built-in kinds (k8s.io/client-go v0.37.2's scheme), for fake-apiserver to give its objects the
// shape kube-apiserver's objects have after a round trip through their Go types: fields without
// `omitempty`/`omitzero` written with their zero value (`status: {}`, `replicas: 0`,
// `lastProbeTime: null`), empty ones with `omitempty` left out (`finalizers: []`), nulls of
// non-nullable fields read as the zero value. Each kind's zero value (what the field manager
// compares a create against) follows from the same table.
//
// Run from this folder: go run . > ../../src/registry/go_types.json
package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// field is one JSON member of a struct: [name, kind, elem, omit, zero].
//
//	kind: "struct" (elem: a type id), "ptr", "slice", "map" (elem: a type id when the element
//	is a struct or a pointer to one, else ""), "string", "int", "float", "bool", "bytes",
//	"opaque" (a struct with a marshaler of its own, such as metav1.Time or
//	resource.Quantity: zero is what it writes for the zero value), "any".
//	omit: "" (always written), "empty" (omitempty), "zero" (omitzero).
//
//	quantity: "q" when the value, or what a pointer, slice or map holds, is a
//	resource.Quantity (written in its canonical form); "rl" for a core/v1 ResourceList, whose
//	values the v1 defaulting also rounds up to milli-units (SetDefaults_ResourceList).
type field struct {
	Name     string      `json:"n"`
	Kind     string      `json:"k"`
	Elem     string      `json:"e,omitempty"`
	Omit     string      `json:"o,omitempty"`
	Zero     interface{} `json:"z,omitempty"`
	Quantity string      `json:"q,omitempty"`
}

var quantityType = reflect.TypeOf(resource.Quantity{})

// quantityOf says whether t holds quantities (see field.Quantity).
func quantityOf(t reflect.Type) string {
	if t.Name() == "ResourceList" && t.PkgPath() == "k8s.io/api/core/v1" {
		return "rl"
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t == quantityType {
		return "q"
	}
	return ""
}

var (
	types     = map[string][]field{}
	marshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	textMarsh = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
)

func id(t reflect.Type) string {
	return strings.TrimPrefix(t.PkgPath(), "k8s.io/") + "." + t.Name()
}

func custom(t reflect.Type) bool {
	return t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) ||
		t.Implements(textMarsh) || reflect.PointerTo(t).Implements(textMarsh)
}

// elemOf names the struct an element (or pointer to one) is, registering it.
func elemOf(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && !custom(t) {
		return walk(t)
	}
	return ""
}

func walk(t reflect.Type) string {
	name := id(t)
	if _, seen := types[name]; seen {
		return name
	}
	types[name] = nil // a recursive type refers to itself by name
	fields := []field{}
	collect(t, &fields)
	types[name] = fields
	return name
}

func collect(t reflect.Type, out *[]field) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		parts := strings.Split(tag, ",")
		name := parts[0]
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collect(ft, out) // promoted, as encoding/json does
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		fl := field{Name: name}
		for _, o := range parts[1:] {
			switch o {
			case "omitempty":
				if fl.Omit == "" {
					fl.Omit = "empty"
				}
			case "omitzero":
				fl.Omit = "zero"
			}
		}
		ft := f.Type
		fl.Quantity = quantityOf(ft)
		switch {
		case ft.Kind() == reflect.Pointer:
			fl.Kind, fl.Elem = "ptr", elemOf(ft.Elem())
		case custom(ft) && ft.Kind() == reflect.Struct:
			fl.Kind = "opaque"
			b, err := json.Marshal(reflect.Zero(ft).Interface())
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s.%s: %v\n", id(t), f.Name, err)
				os.Exit(1)
			}
			var z interface{}
			_ = json.Unmarshal(b, &z)
			fl.Zero = z
			if z == nil {
				fl.Zero = json.RawMessage("null")
			}
		case ft.Kind() == reflect.Struct:
			fl.Kind, fl.Elem = "struct", walk(ft)
		case ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array:
			if ft.Elem().Kind() == reflect.Uint8 {
				fl.Kind = "bytes" // written as base64 text; nil as null
			} else {
				fl.Kind, fl.Elem = "slice", elemOf(ft.Elem())
			}
		case ft.Kind() == reflect.Map:
			fl.Kind, fl.Elem = "map", elemOf(ft.Elem())
		case ft.Kind() == reflect.String:
			fl.Kind = "string"
		case ft.Kind() == reflect.Bool:
			fl.Kind = "bool"
		case ft.Kind() == reflect.Float32 || ft.Kind() == reflect.Float64:
			fl.Kind = "float"
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64:
			fl.Kind = "int"
		default:
			fl.Kind = "any"
		}
		*out = append(*out, fl)
	}
}

func main() {
	kinds := map[string]string{}
	for gvk, t := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") ||
			strings.HasSuffix(gvk.Kind, "Options") || gvk.Kind == "WatchEvent" || gvk.Kind == "Status" {
			continue
		}
		kinds[gvk.GroupVersion().String()+"/"+gvk.Kind] = walk(t)
	}
	enc := func(v interface{}) string {
		b, err := json.Marshal(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return string(b)
	}
	sorted := func(m map[string]bool) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	kn, tn := map[string]bool{}, map[string]bool{}
	for k := range kinds {
		kn[k] = true
	}
	for k := range types {
		tn[k] = true
	}
	fmt.Println(`{"source":"k8s.io/client-go v0.37.2 scheme, k8s.io/api v0.37.2","kinds":{`)
	ks := sorted(kn)
	for i, k := range ks {
		sep := ","
		if i == len(ks)-1 {
			sep = ""
		}
		fmt.Printf("%q:%q%s\n", k, kinds[k], sep)
	}
	fmt.Println(`},"types":{`)
	ts := sorted(tn)
	for i, k := range ts {
		sep := ","
		if i == len(ts)-1 {
			sep = ""
		}
		fmt.Printf("%q:%s%s\n", k, enc(types[k]), sep)
	}
	fmt.Println("}}")
}
