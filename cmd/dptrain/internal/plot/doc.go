// Package plot draws the figures of the dptrain command: ε against steps for every accounting
// mode of "dptrain account compare" (Compare), and a one-run audit's lower bound against the
// accountants' ε (Audit). It computes no privacy number; it draws the ones it is given.
package plot
