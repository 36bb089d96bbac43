// Package app defines an application: an ordered chain of segments with their
// payload sizes, run once per request, as written in an app spec file (YAML or
// JSON). It loads and validates spec files with errors that name the file and
// the offending field, and turns a spec into a runnable Chain.
package app
