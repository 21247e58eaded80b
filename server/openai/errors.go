package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error types as vLLM names them in its error envelope.
const (
	typeBadRequest   = "BadRequestError"
	typeInvalidInput = "InvalidUserInput"
	typeNotFound     = "NotFoundError"
	typeInternal     = "InternalServerError"
	typeTooMany      = "TooManyRequestsError"
	typeTooLarge     = "RequestEntityTooLarge"
)

// APIError is an error answered to a client: vLLM's
// {"error": {"message", "type", "param", "code"}} with code the HTTP
// status.
type APIError struct {
	Status  int
	Type    string
	Message string
	Param   string // the request field at fault; "" for none
}

func (e *APIError) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("openai: %d %s (%s): %s", e.Status, e.Type, e.Param, e.Message)
	}
	return fmt.Sprintf("openai: %d %s: %s", e.Status, e.Type, e.Message)
}

// ErrorInfo is the body of vLLM's ErrorResponse.
type ErrorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// ErrorResponse is vLLM's error envelope.
type ErrorResponse struct {
	Error ErrorInfo `json:"error"`
}

func badRequest(param, format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: typeBadRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

func notFound(param, format string, args ...any) *APIError {
	return &APIError{Status: http.StatusNotFound, Type: typeNotFound, Param: param, Message: fmt.Sprintf(format, args...)}
}

func internal(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusInternalServerError, Type: typeInternal, Message: fmt.Sprintf(format, args...)}
}

// unknownModel is vLLM's answer to a request for a model it does not serve.
func unknownModel(name string) *APIError {
	return notFound("model", "The model `%s` does not exist.", name)
}

// writeError answers err: an *APIError as it says, anything else as a 500.
func writeError(w http.ResponseWriter, err error) {
	var ae *APIError
	if !errors.As(err, &ae) {
		ae = internal("%v", err)
	}
	info := ErrorInfo{Message: ae.Message, Type: ae.Type, Code: ae.Status}
	if ae.Param != "" {
		info.Param = &ae.Param
	}
	writeJSON(w, ae.Status, ErrorResponse{Error: info})
}

// writeDetail answers FastAPI's {"detail": msg}, as vLLM does for unknown
// routes and methods.
func writeDetail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"detail": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorResponse{Error: ErrorInfo{Message: err.Error(), Type: typeInternal, Code: status}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(msg))
}

// decodeError turns a JSON decoding error into a 400 naming the field.
func decodeError(err error) *APIError {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &te):
		field := strings.TrimPrefix(te.Field, "samplingFields.") // the embedded struct's name
		if field == "" {
			return badRequest("", "the body must be a JSON object, got a JSON %s", te.Value)
		}
		return badRequest(field, "field %q: got a JSON %s, want %s", field, te.Value, goTypeName(te.Type.String()))
	case errors.As(err, &se):
		return badRequest("", "the body is not valid JSON: %v (at byte %d)", se, se.Offset)
	}
	return badRequest("", "the body is not valid JSON: %v", err)
}

// goTypeName names a Go type the way a JSON user thinks of it.
func goTypeName(t string) string {
	switch t {
	case "int", "int64", "*int", "*int64":
		return "an integer"
	case "float64", "*float64":
		return "a number"
	case "bool", "*bool":
		return "a boolean"
	case "string", "*string":
		return "a string"
	case "[]int":
		return "a list of token ids"
	case "[]string":
		return "a list of strings"
	}
	return t
}
