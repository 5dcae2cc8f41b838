package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
)

// The template output formats of get and events, as kubectl names them;
// each takes its template after "=" or from --template.
const (
	outputJSONPath       = "jsonpath"
	outputJSONPathFile   = "jsonpath-file"
	outputJSONPathAsJSON = "jsonpath-as-json"
	outputGoTemplate     = "go-template"
	outputGoTemplateFile = "go-template-file"
	outputTemplate       = "template"
	outputTemplateFile   = "templatefile"
)

var templateFormats = []string{outputJSONPath, outputJSONPathFile, outputJSONPathAsJSON, outputGoTemplate, outputGoTemplateFile, outputTemplate, outputTemplateFile}

// templateFlags are kubectl's --template and --allow-missing-template-keys.
type templateFlags struct {
	template         string
	allowMissingKeys bool
}

func (f *templateFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.template, "template", "", "template string or path to a template file to use with -o jsonpath|jsonpath-file|go-template|go-template-file")
	cmd.Flags().BoolVar(&f.allowMissingKeys, "allow-missing-template-keys", true, "if true, ignore any errors in templates when a field or map key is missing; only applies to go-template and jsonpath output formats")
}

// splitTemplateFormat splits "-o jsonpath={.a}" into the format and its
// template; a format without "=" keeps --template's. ok is false when
// format is not a template format.
func splitTemplateFormat(format, flagTemplate string) (name, tmpl string, ok bool) {
	name, tmpl, _ = strings.Cut(format, "=")
	for _, f := range templateFormats {
		if name == f {
			if tmpl == "" {
				tmpl = flagTemplate
			}
			return name, tmpl, true
		}
	}
	return "", "", false
}

// templatePrinter makes the printer of a template format with kubectl's
// parsing and messages (cli-runtime's JSONPathPrintFlags and
// GoTemplatePrintFlags): nil when format is not a template format.
func templatePrinter(format string, f templateFlags) (printers.ResourcePrinter, error) {
	name, tmpl, ok := splitTemplateFormat(format, f.template)
	if !ok {
		return nil, nil
	}
	if tmpl == "" {
		return nil, errors.New("template format specified but no template given")
	}
	if name == outputJSONPathFile || name == outputGoTemplateFile || name == outputTemplateFile {
		data, err := os.ReadFile(tmpl)
		if err != nil {
			return nil, fmt.Errorf("error reading --template %s, %v", tmpl, err)
		}
		tmpl = string(data)
	}
	switch name {
	case outputJSONPath, outputJSONPathFile, outputJSONPathAsJSON:
		p, err := printers.NewJSONPathPrinter(tmpl)
		if err != nil {
			return nil, fmt.Errorf("error parsing jsonpath %s, %v", tmpl, err)
		}
		p.AllowMissingKeys(f.allowMissingKeys)
		p.EnableJSONOutput(name == outputJSONPathAsJSON)
		return p, nil
	default:
		p, err := printers.NewGoTemplatePrinter([]byte(tmpl))
		if err != nil {
			return nil, fmt.Errorf("error parsing template %s, %v", tmpl, err)
		}
		p.AllowMissingKeys(f.allowMissingKeys)
		return p, nil
	}
}

// checkOutputOrTemplate is checkOutput that also accepts the template
// formats, and names them among the allowed ones.
func checkOutputOrTemplate(format string, f templateFlags, allowed ...string) (printers.ResourcePrinter, error) {
	if p, err := templatePrinter(format, f); p != nil || err != nil {
		return p, err
	}
	return nil, checkOutput(format, append(allowed, templateFormats...)...)
}

// printTemplate runs a template printer on obj (a pod, an event or a
// list of them), through its JSON as kubectl does. A template that fails
// on the object exits 1, as in kubectl.
func printTemplate(w io.Writer, p printers.ResourcePrinter, obj any) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err == nil {
		err = p.PrintObj(&unstructured.Unstructured{Object: content}, w)
	}
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	return nil
}

// jsonPathWait is kubectl wait's --for=jsonpath: the expression must
// match at most one value, and with a value given, a scalar equal to it
// once printed (kubectl's JSONPathWait).
type jsonPathWait struct {
	path     *jsonpath.JSONPath
	value    string
	hasValue bool
}

func newJSONPathWait(expr string) (*jsonPathWait, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("jsonpath expression cannot be empty")
	}
	j := jsonpath.New("wait").AllowMissingKeys(true)
	if err := j.Parse(expr); err != nil {
		return nil, err
	}
	return &jsonPathWait{path: j}, nil
}

func (w *jsonPathWait) met(obj any) (bool, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return false, err
	}
	results, err := w.path.FindResults(content)
	if err != nil {
		return false, err
	}
	if len(results) == 0 || len(results[0]) == 0 {
		return false, nil
	}
	if len(results) > 1 {
		return false, errors.New("given jsonpath expression matches more than one list")
	}
	if len(results[0]) > 1 {
		return false, errors.New("given jsonpath expression matches more than one value")
	}
	if !w.hasValue {
		return true, nil
	}
	v := results[0][0]
	if v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	switch v.Interface().(type) {
	case map[string]any, []any:
		return false, errors.New("jsonpath leads to a nested object or list which is not supported")
	}
	return strings.TrimSpace(fmt.Sprintf("%v", v.Interface())) == strings.TrimSpace(w.value), nil
}
