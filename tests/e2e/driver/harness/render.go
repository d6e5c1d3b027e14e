package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// RenderChart renders a Helm chart's templates with its values.yaml merged with overrides, for
// a release in namespace. When a `helm` binary is on PATH it is used (`helm template`); otherwise
// the templates are executed with Go's text/template (the engine Helm is built on) and Helm's
// functions: sprig's, and Helm's own include and toYaml. The second result names the renderer.
func RenderChart(chartDir, release, namespace string, overrides map[string]interface{}) (string, string, error) {
	if helm, err := exec.LookPath("helm"); err == nil && os.Getenv("GANTRY_E2E_NO_HELM") == "" {
		args := []string{"template", release, chartDir, "--namespace", namespace}
		if len(overrides) > 0 {
			f, err := os.CreateTemp("", "gantry-values-*.yaml")
			if err != nil {
				return "", "", err
			}
			defer os.Remove(f.Name())
			data, _ := yaml.Marshal(overrides)
			f.Write(data)
			f.Close()
			args = append(args, "--values", f.Name())
		}
		out, err := exec.Command(helm, args...).CombinedOutput()
		if err != nil {
			return "", "", fmt.Errorf("helm template: %v: %s", err, out)
		}
		return string(out), "helm", nil
	}
	out, err := renderSubset(chartDir, release, namespace, overrides)
	return out, "text/template with Helm's functions the chart uses", err
}

func renderSubset(chartDir, release, namespace string, overrides map[string]interface{}) (string, error) {
	var chart map[string]interface{}
	if err := readYAML(filepath.Join(chartDir, "Chart.yaml"), &chart); err != nil {
		return "", err
	}
	var values map[string]interface{}
	if err := readYAML(filepath.Join(chartDir, "values.yaml"), &values); err != nil {
		return "", err
	}
	values = mergeValues(values, overrides)
	files, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	root := template.New("chart")
	// Helm's template functions: sprig's (less env and expandenv, as Helm) and Helm's own
	// toYaml and include.
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	funcs["toYaml"] = func(v interface{}) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(data), "\n")
	}
	funcs["include"] = func(string, interface{}) (string, error) { return "", nil } // replaced below
	root.Funcs(funcs)
	funcs["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := root.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	root.Funcs(funcs)
	var outputs []string
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		name := filepath.Base(f)
		if _, err := root.New(name).Option("missingkey=zero").Parse(string(data)); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		names = append(names, name)
	}
	dot := map[string]interface{}{
		"Values":  values,
		"Chart":   map[string]interface{}{"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"]},
		"Release": map[string]interface{}{"Name": release, "Namespace": namespace, "Service": "Helm"},
	}
	for _, name := range names {
		if strings.HasPrefix(name, "_") || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			continue // helpers and NOTES.txt render nothing
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, dot); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		outputs = append(outputs, "---\n# Source: "+name+"\n"+buf.String())
	}
	return strings.Join(outputs, "\n"), nil
}

func readYAML(path string, out interface{}) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, out)
}

// mergeValues overlays b onto a (maps merge recursively, anything else replaces), as Helm does
// with --values files.
func mergeValues(a, b map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]interface{}); ok {
			if am, ok := out[k].(map[string]interface{}); ok {
				out[k] = mergeValues(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
