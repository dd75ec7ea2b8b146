// Command sockserver is the checkpoint tests' server: one process holding a
// listening TCP socket and a UDP socket, so that a checkpoint has both to
// dump and a restore into a pod on another IP both to bring back. It
// answers each line on a TCP connection with "tcp LINE" and each datagram
// with "udp DATAGRAM", and prints "closed ADDR: ERR" when a connection ends,
// which tells a test that a connection it held across a checkpoint came
// back closed.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"net"
)

func main() {
	tcpAddr := flag.String("tcp", ":8080", "TCP address to listen on")
	udpAddr := flag.String("udp", ":9000", "UDP address to answer on")
	flag.Parse()
	// Plain TCP: Go (1.24 on) listens with MPTCP where the kernel has it,
	// and CRIU 4.1 dumps no MPTCP socket ("Unsupported proto 262").
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp", *tcpAddr)
	if err != nil {
		log.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", *udpAddr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening")
	go serveUDP(pc)
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serveTCP(c)
	}
}

// serveTCP answers c's lines until it ends, and says so once c is closed:
// from then on the process holds no socket of it.
func serveTCP(c net.Conn) {
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if _, err := fmt.Fprintf(c, "tcp %s\n", sc.Text()); err != nil {
			break
		}
	}
	c.Close()
	fmt.Printf("closed %s: %v\n", c.RemoteAddr(), sc.Err())
}

func serveUDP(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			log.Fatal(err)
		}
		_, _ = pc.WriteTo(append([]byte("udp "), buf[:n]...), from)
	}
}
