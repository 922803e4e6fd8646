package httpwasm

// SaveResponseHeader and SetBodyErr let the external tests (which use
// runtime/filtertest, itself importing the runtime) drive an Invocation.
func (inv *Invocation) SaveResponseHeader(name string) { inv.saveResponseHeader(name) }
func (inv *Invocation) SetBodyErr(err error)           { inv.bodyErr = err }
