/* The round trip the shell parser helper pays, socket pair against two pipes (BENCHMARKS.md,
 * issue 46 item 3): 200,000 requests of 28 bytes answered with 296, both sides reading without
 * sleeping. `cc -O2 scripts/round_trip.c -o /tmp/rt && /tmp/rt 1 && /tmp/rt 0` (1: socket pair). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sched.h>
#include <errno.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/wait.h>
static ssize_t rd(int fd, char*b, size_t n, int sock){ for(;;){ ssize_t r = sock? recv(fd,b,n,MSG_DONTWAIT) : read(fd,b,n); if(r>=0) return r; if(errno==EAGAIN){sched_yield(); continue;} return -1; } }
static ssize_t wr(int fd, char*b, size_t n, int sock){ return sock? send(fd,b,n,MSG_NOSIGNAL): write(fd,b,n); }
int main(int argc,char**argv){ int sock = atoi(argv[1]); int N=200000; int a2b[2], b2a[2];
 if(sock){ int s[2]; socketpair(AF_UNIX,SOCK_STREAM,0,s); a2b[0]=s[1]; a2b[1]=s[0]; b2a[0]=s[0]; b2a[1]=s[1]; }
 else { pipe2(a2b,O_NONBLOCK); pipe2(b2a,O_NONBLOCK); }
 char buf[65536]; char req[28]; char ans[296]; memset(req,'x',28); memset(ans,'y',296);
 if(fork()==0){ for(int i=0;i<N;i++){ rd(a2b[0],buf,sizeof buf,sock); wr(b2a[1],ans,296,sock);} _exit(0);} 
 struct timespec t0,t1; clock_gettime(CLOCK_MONOTONIC,&t0);
 for(int i=0;i<N;i++){ wr(a2b[1],req,28,sock); ssize_t got=0; while(got<296){ ssize_t r=rd(b2a[0],buf,sizeof buf,sock); got+=r;} }
 clock_gettime(CLOCK_MONOTONIC,&t1); wait(NULL);
 double us = ((t1.tv_sec-t0.tv_sec)*1e9 + (t1.tv_nsec-t0.tv_nsec))/1e3/N; printf("%s: %.2f us per round trip\n", sock?"socketpair":"pipes", us); }
