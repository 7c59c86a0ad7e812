// pause: the Pod sandbox's process for the e2e node (hack/build-images.sh builds it
// into an image FROM scratch and tags it as containerd's sandbox_image). It holds
// the Pod's namespaces open: sleeps until SIGTERM/SIGINT, reaping any child it
// inherits as PID 1 of a shared PID namespace. Standard library only.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var status syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
