package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchDebounce is how long Watch waits after the last change to the
// module file before it reloads it.
const WatchDebounce = 100 * time.Millisecond

// Watch swaps the filter's module whenever the file at path changes. It
// watches the directory, so editors and deploy tools that write a new
// file and rename it over the old one are seen. Changes are debounced; a
// module that fails to compile or start is logged and the old one keeps
// serving. The returned stop ends the watch; Close also ends it.
func (f *Filter) Watch(path string) (stop func(), err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("filter %q: watch %s: %w", f.name, path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("filter %q: watch %s: %w", f.name, path, err)
	}
	if err := w.Add(filepath.Dir(abs)); err != nil {
		w.Close()
		return nil, fmt.Errorf("filter %q: watch %s: %w", f.name, path, err)
	}
	quit := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var fire <-chan time.Time
		var timer *time.Timer
		for {
			select {
			case <-quit:
				if timer != nil {
					timer.Stop()
				}
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) != abs || !ev.Has(fsnotify.Write|fsnotify.Create|fsnotify.Rename) {
					continue
				}
				if timer == nil {
					timer = time.NewTimer(WatchDebounce)
				} else {
					timer.Reset(WatchDebounce)
				}
				fire = timer.C
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				f.log.Warn("filter module watch error", "path", abs, "err", err)
			case <-fire:
				fire = nil
				f.reloadFile(abs)
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(quit)
			w.Close()
			<-exited
		})
	}
	f.watchMu.Lock()
	f.watches = append(f.watches, stop)
	f.watchMu.Unlock()
	return stop, nil
}

// reloadFile compiles the module at path and swaps to it when it differs
// from the current one.
func (f *Filter) reloadFile(path string) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		if !os.IsNotExist(err) { // mid-rename; the Create event follows
			f.log.Warn("filter module reload: read failed", "path", path, "err", err)
		}
		return
	}
	ctx := context.Background()
	m, err := f.e.Compile(ctx, wasm)
	if err != nil {
		f.swapErrors.Add(1)
		f.log.Error("filter module reload: compile failed; previous module keeps serving", "path", path, "err", err)
		return
	}
	defer m.Close(ctx)
	if mp := f.cur.Load(); mp != nil && mp.m.digest == m.digest {
		return
	}
	_ = f.Swap(ctx, m) // logs its own failure
}
