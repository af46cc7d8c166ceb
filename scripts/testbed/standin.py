"""Stand-in for an OAI service in the testbed (the real ones need sources from the internet).

Started by the charm's own start gate -- only once the component's tunnels have a handshake --
exactly where the real service would be. It listens on TCP port STANDIN_PORT on every service
address given and answers each connection with one line naming itself, so that a peer VNF can
prove the service is reachable through the tunnel. Usage: standin.py <service name> <address>...
"""
import socket
import sys
import threading

STANDIN_PORT = 47100


def serve(sock, banner):
    while True:
        conn, _ = sock.accept()
        with conn:
            conn.sendall(banner)


def main():
    name, addresses = sys.argv[1], sys.argv[2:]
    banner = "{} stand-in\n".format(name).encode()
    threads = []
    for address in addresses:
        sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, STANDIN_PORT))
        sock.listen(16)
        t = threading.Thread(target=serve, args=(sock, banner), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
