// A Go program that hangs: four goroutines blocked receiving from a
// channel nobody sends on, one reading its standard input (a pipe nobody
// writes: the thread running it blocks in read), one sleeping an hour (so
// that the runtime does not call it a deadlock).  Prints "ready" once all
// are set.
package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

//go:noinline
func waitFor(ch chan int, wg *sync.WaitGroup) {
	wg.Done()
	<-ch
}

//go:noinline
func readInput(wg *sync.WaitGroup) {
	buf := make([]byte, 1)
	wg.Done()
	os.Stdin.Read(buf)
}

func main() {
	var wg sync.WaitGroup
	ch := make(chan int)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go waitFor(ch, &wg)
	}
	wg.Add(1)
	go readInput(&wg)
	go func() { time.Sleep(time.Hour) }()
	wg.Wait()
	fmt.Println("ready")
	<-ch
}
