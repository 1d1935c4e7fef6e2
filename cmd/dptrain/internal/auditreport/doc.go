// Package auditreport keeps and prints the report of "dptrain audit": the run the audit
// trains (a run of its own, beside the config's), the report file it writes into that run's
// directory, and the text that holds every accountant's ε to the measured lower bound.
package auditreport
