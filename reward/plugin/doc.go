// Package plugin scores completions out of process, so a reward can be
// written in any language.
//
// # Protocol
//
// A plugin answers requests of this JSON shape:
//
//	{"id": 7, "prompt": "What is 2 + 3?", "completion": " 5", "answer": "5", "info": {"k": "v"}}
//
// with
//
//	{"id": 7, "reward": 1.0}            or   {"id": 7, "error": "why"}
//
// A subprocess plugin ([Proc]) reads one request per line on stdin and writes
// one answer per line on stdout, in any order (answers are matched by id), and
// may log to stderr. An HTTP plugin ([HTTP]) takes one request per POST and
// answers with one JSON object (the id may be omitted).
//
// Both bound the requests in flight and give each a timeout. A reward that is
// not a finite number, an answer that is not JSON, a plugin that hangs past
// the timeout or a process that dies each give a typed [*Error] naming the
// plugin, the request and what was wrong; a dead or hung process is restarted
// on the next request, so one crash costs the requests in flight, not the run.
package plugin
