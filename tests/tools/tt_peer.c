/* A TCP peer that is not iWARP, for the tools' message tests: listens on
 * 127.0.0.1 (port 0), prints "port N" on stdout, accepts one connection.
 *   tt_peer reply TEXT   read what the client sends first, answer TEXT
 *                        (C escapes \r \n allowed), close;
 *   tt_peer silent       read and discard, never answer, until the client
 *                        closes.
 * Bounded: exits after 60 s whatever happens. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static size_t unescape(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (; *s && n < cap; s++) {
		if (s[0] == '\\' && s[1] == 'r') {
			out[n++] = '\r';
			s++;
		} else if (s[0] == '\\' && s[1] == 'n') {
			out[n++] = '\n';
			s++;
		} else {
			out[n++] = *s;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	char buf[4096], text[4096];
	int one = 1, l, c;
	bool reply;

	if (argc < 2 || (strcmp(argv[1], "reply") == 0 && argc < 3)) {
		fprintf(stderr, "usage: tt_peer reply TEXT | tt_peer silent\n");
		return 2;
	}
	reply = strcmp(argv[1], "reply") == 0;
	alarm(60);
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4) ||
	    getsockname(l, (struct sockaddr *)&a, &len)) {
		perror("tt_peer");
		return 1;
	}
	printf("port %u\n", ntohs(a.sin_port));
	fflush(stdout);
	c = accept(l, NULL, NULL);
	if (c < 0) {
		perror("tt_peer: accept");
		return 1;
	}
	if (reply) {
		struct pollfd p = { c, POLLIN, 0 };
		size_t n = unescape(argv[2], text, sizeof(text));

		if (poll(&p, 1, 5000) > 0)
			(void)!read(c, buf, sizeof(buf));
		(void)!write(c, text, n);
		shutdown(c, SHUT_WR);
		while (read(c, buf, sizeof(buf)) > 0)
			;
	} else {
		while (read(c, buf, sizeof(buf)) > 0)
			;
	}
	close(c);
	close(l);
	return 0;
}
