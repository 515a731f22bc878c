/* evloop.c: fibers on an epoll loop (see evloop.h).
 *
 * The switch is a few instructions of assembly on x86-64 (callee-saved
 * registers, the SSE and x87 control words, the stack pointer): swapcontext
 * would add two sigprocmask system calls to every switch, and a switch
 * happens twice per reply.  Other architectures use ucontext.  Under ASan
 * every switch is announced (__sanitizer_*_switch_fiber), so the checker
 * knows which stack is live.
 *
 * Registration is lazy: a fiber's socket stays registered with the events it
 * last waited for, so the common case (send, wait for the reply, send ...)
 * costs no epoll_ctl.  An event for a fiber that is not waiting for it (its
 * socket closed under it while it sleeps until a ticket) unregisters the
 * socket, so a level-triggered condition cannot spin the loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "evloop.h"

#if defined(__SANITIZE_ADDRESS__)
#define BT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define BT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BT_TSAN 1
#endif
#endif
#ifdef BT_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef BT_TSAN
/* ThreadSanitizer follows a stack switch only when told (its fiber API) */
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif
#if defined(BT_ASAN) || defined(BT_TSAN)
#define BT_FIBER_STACK (1024 * 1024)
#else
#define BT_FIBER_STACK (128 * 1024)
#endif
#define BT_FIBER_GUARD 4096

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

struct bt_loop {
    int epfd;
    bt_fiber *ready_head, *ready_tail;
    bt_fiber **heap;         /* timers: min-heap by deadline */
    int32_t nheap, heap_cap;
    bt_fiber **all;          /* every fiber spawned and not DONE: the abort wakes them */
    int32_t nall, all_cap;
    int live;
    int32_t nparked;         /* fibers in bt_io_park */
    uint64_t finished;       /* fibers that ended, ever: the lists are compacted only then */
    uint64_t compacted;
    _Atomic int aborted;
    int abort_seen;
    void *main_sp;
    void *main_fake;
    void *main_tsan;         /* ThreadSanitizer's handle of the loop thread's own context */
    const void *main_bottom;
    size_t main_size;
#if !defined(__x86_64__)
    ucontext_t main_ctx;
#endif
};

static __thread bt_fiber *tl_cur;

uint64_t bt_evloop_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- context switch -------------------------------------------------------- */

#if defined(__x86_64__)
__attribute__((visibility("hidden"))) void bt_evloop_switch(void **save_sp, void *to_sp);
__attribute__((visibility("hidden"))) void bt_evloop_entry(bt_fiber *f);
__attribute__((visibility("hidden"))) void bt_evloop_start(void);
__asm__(".text\n"
        ".globl bt_evloop_switch\n"
        ".hidden bt_evloop_switch\n"
        ".type bt_evloop_switch,@function\n"
        "bt_evloop_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size bt_evloop_switch,.-bt_evloop_switch\n"
        ".globl bt_evloop_start\n"
        ".hidden bt_evloop_start\n"
        ".type bt_evloop_start,@function\n"
        "bt_evloop_start:\n"
        "  movq %r12, %rdi\n"
        "  call bt_evloop_entry\n"
        "  ud2\n"
        ".size bt_evloop_start,.-bt_evloop_start\n");
#else
static void bt_evloop_entry(bt_fiber *f);
static void ucontext_entry(unsigned int hi, unsigned int lo)
{
    bt_evloop_entry((bt_fiber *)(((uintptr_t)hi << 32) | (uintptr_t)lo));
}
#endif

static void to_loop(bt_fiber *f, int exiting)
{
    bt_loop *l = f->loop;
#ifdef BT_ASAN
    __sanitizer_start_switch_fiber(exiting ? NULL : &f->asan_fake, l->main_bottom, l->main_size);
#endif
#ifdef BT_TSAN
    __tsan_switch_to_fiber(l->main_tsan, 0);
#endif
#if defined(__x86_64__)
    bt_evloop_switch(&f->sp, l->main_sp);
#else
    swapcontext((ucontext_t *)f->ctx, &l->main_ctx);
#endif
    (void)exiting;
#ifdef BT_ASAN
    __sanitizer_finish_switch_fiber(f->asan_fake, &l->main_bottom, &l->main_size);
#endif
}

static void to_fiber(bt_loop *l, bt_fiber *f)
{
    tl_cur = f;
#ifdef BT_ASAN
    __sanitizer_start_switch_fiber(&l->main_fake, (char *)f->stack + BT_FIBER_GUARD,
                                   f->stack_size - BT_FIBER_GUARD);
#endif
#ifdef BT_TSAN
    if (!l->main_tsan)
        l->main_tsan = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(f->tsan, 0);
#endif
#if defined(__x86_64__)
    bt_evloop_switch(&l->main_sp, f->sp);
#else
    swapcontext(&l->main_ctx, (ucontext_t *)f->ctx);
#endif
#ifdef BT_ASAN
    __sanitizer_finish_switch_fiber(l->main_fake, NULL, NULL);
#endif
    tl_cur = NULL;
}

#if defined(__x86_64__)
__attribute__((visibility("hidden")))
#else
static
#endif
void bt_evloop_entry(bt_fiber *f)
{
#ifdef BT_ASAN
    __sanitizer_finish_switch_fiber(NULL, &f->loop->main_bottom, &f->loop->main_size);
#endif
    f->fn(f->arg);
    f->state = BT_FIBER_DONE;
    f->loop->live--;
    f->loop->finished++;
    to_loop(f, 1);
    abort(); /* a DONE fiber is never resumed */
}

/* ---- loop ------------------------------------------------------------------- */

bt_loop *bt_loop_new(void)
{
    bt_loop *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        free(l);
        return NULL;
    }
    return l;
}

void bt_loop_free(bt_loop *l)
{
    if (!l)
        return;
    close(l->epfd);
    free(l->heap);
    free(l->all);
    free(l);
}

void bt_fiber_release(bt_fiber *f)
{
    if (f->stack)
        munmap(f->stack, f->stack_size);
    f->stack = NULL;
#ifdef BT_TSAN
    if (f->tsan)
        __tsan_destroy_fiber(f->tsan);
    f->tsan = NULL;
#endif
    free(f->ctx);
    f->ctx = NULL;
    f->state = BT_FIBER_FREE;
}

static void ready(bt_loop *l, bt_fiber *f)
{
    f->state = BT_FIBER_READY;
    f->next = NULL;
    if (l->ready_tail)
        l->ready_tail->next = f;
    else
        l->ready_head = f;
    l->ready_tail = f;
}

int bt_loop_spawn(bt_loop *l, bt_fiber *f, void (*fn)(void *), void *arg)
{
    if (l->nall == l->all_cap) {
        int32_t cap = l->all_cap ? l->all_cap * 2 : 64;
        bt_fiber **a = realloc(l->all, sizeof *a * (size_t)cap);
        if (!a)
            return -1;
        l->all = a;
        l->all_cap = cap;
    }
    memset(f, 0, sizeof *f);
    f->stack_size = BT_FIBER_STACK;
    f->stack = mmap(NULL, f->stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1, 0);
    if (f->stack == MAP_FAILED) {
        f->stack = NULL;
        return -1;
    }
    mprotect(f->stack, BT_FIBER_GUARD, PROT_NONE); /* an overflow faults instead of corrupting */
#ifdef BT_TSAN
    f->tsan = __tsan_create_fiber(0);
#endif
    f->loop = l;
    f->fn = fn;
    f->arg = arg;
    f->wait_fd = -1;
    f->reg_fd = -1;
    f->heap_idx = -1;
#if defined(__x86_64__)
    uintptr_t top = ((uintptr_t)f->stack + f->stack_size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 80);
    uint32_t ctl[2] = {0x1F80, 0x037F};   /* the default SSE and x87 control words */
    memcpy(&sp[0], ctl, sizeof ctl);
    sp[1] = 0;                    /* r15 */
    sp[2] = 0;                    /* r14 */
    sp[3] = 0;                    /* r13 */
    sp[4] = (uint64_t)(uintptr_t)f;  /* r12: bt_evloop_start's argument */
    sp[5] = 0;                    /* rbx */
    sp[6] = 0;                    /* rbp */
    sp[7] = (uint64_t)(uintptr_t)bt_evloop_start;
    f->sp = sp;
#else
    ucontext_t *uc = calloc(1, sizeof *uc);
    if (!uc || getcontext(uc) != 0) {
        free(uc);
        munmap(f->stack, f->stack_size);
        f->stack = NULL;
        return -1;
    }
    uc->uc_stack.ss_sp = (char *)f->stack + BT_FIBER_GUARD;
    uc->uc_stack.ss_size = f->stack_size - BT_FIBER_GUARD;
    uc->uc_link = NULL;
    uintptr_t p = (uintptr_t)f;
    makecontext(uc, (void (*)(void))ucontext_entry, 2, (unsigned int)(p >> 32), (unsigned int)p);
    f->ctx = uc;
#endif
    l->all[l->nall++] = f;
    l->live++;
    ready(l, f);
    return 0;
}

/* ---- timers: a binary min-heap of waiting fibers by deadline ------------- */

static void heap_swap(bt_loop *l, int32_t a, int32_t b)
{
    bt_fiber *t = l->heap[a];
    l->heap[a] = l->heap[b];
    l->heap[b] = t;
    l->heap[a]->heap_idx = a;
    l->heap[b]->heap_idx = b;
}

static void heap_up(bt_loop *l, int32_t i)
{
    while (i > 0 && l->heap[(i - 1) / 2]->deadline > l->heap[i]->deadline) {
        heap_swap(l, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(bt_loop *l, int32_t i)
{
    for (;;) {
        int32_t m = i, a = 2 * i + 1, b = a + 1;
        if (a < l->nheap && l->heap[a]->deadline < l->heap[m]->deadline)
            m = a;
        if (b < l->nheap && l->heap[b]->deadline < l->heap[m]->deadline)
            m = b;
        if (m == i)
            return;
        heap_swap(l, i, m);
        i = m;
    }
}

static int heap_push(bt_loop *l, bt_fiber *f)
{
    if (l->nheap == l->heap_cap) {
        int32_t cap = l->heap_cap ? l->heap_cap * 2 : 64;
        bt_fiber **h = realloc(l->heap, sizeof *h * (size_t)cap);
        if (!h)
            return -1;
        l->heap = h;
        l->heap_cap = cap;
    }
    f->heap_idx = l->nheap;
    l->heap[l->nheap++] = f;
    heap_up(l, f->heap_idx);
    return 0;
}

static void heap_remove(bt_loop *l, bt_fiber *f)
{
    int32_t i = f->heap_idx;
    if (i < 0)
        return;
    f->heap_idx = -1;
    int32_t last = --l->nheap;
    if (i != last) {
        l->heap[i] = l->heap[last];
        l->heap[i]->heap_idx = i;
        heap_down(l, i);
        heap_up(l, i);
    }
}

/* ---- running ------------------------------------------------------------- */

/* The lines of a switched-out fiber's stack its return reads first: the
 * registers the switch saved, then the frames of the waits it returns
 * through and of the driver above them.  Fetched while the fiber before it
 * runs, they are in the cache when its turn comes (each is a miss otherwise:
 * a loop's other fibers ran in between).  So is the first line of the fiber
 * after it, whose stack pointer the next turn reads to fetch its stack: that
 * read had waited on a miss (a third of bt_loop_run_once's samples). */
enum { BT_PREFETCH_STACK = 1024 };

/* On x86-64 a hint the compiler keeps: GCC 12 at -O2 dropped every
 * __builtin_prefetch of prefetch_stack as dead code once it fetched the next
 * fiber's line too (the loop over the stack alone had survived).  Elsewhere
 * the builtin, which it may drop: a hint, never a change in what runs. */
static inline void prefetch_line(const void *p)
{
#if defined(__x86_64__)
    __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p);
#endif
}

static void prefetch_stack(const bt_fiber *f)
{
    const char *sp = f->sp;
    if (f->next)
        prefetch_line(f->next);
    if (!sp)
        return;   /* a ucontext switch (not x86-64) keeps its stack pointer elsewhere */
    for (int off = 0; off < BT_PREFETCH_STACK; off += 64)
        prefetch_line(sp + off);
}

static void run_ready(bt_loop *l)
{
    /* those ready now; a fiber made ready meanwhile runs on the next pass */
    bt_fiber *tail = l->ready_tail;
    while (l->ready_head) {
        bt_fiber *f = l->ready_head;
        l->ready_head = f->next;
        if (!l->ready_head)
            l->ready_tail = NULL;
        else if (f != tail)
            prefetch_stack(l->ready_head);
        to_fiber(l, f);
        if (f == tail)
            break;
    }
}

static void wake_all(bt_loop *l)
{
    for (int32_t i = 0; i < l->nall; i++) {
        bt_fiber *f = l->all[i];
        if (f->state == BT_FIBER_WAITING) {
            heap_remove(l, f);
            f->revents = 0;
            ready(l, f);
        }
    }
}

static int wait_events(bt_loop *l, struct epoll_event *evs, int max, uint64_t timeout_ns)
{
#ifdef SYS_epoll_pwait2
    static _Atomic int no_pwait2;
    if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
        struct timespec ts = {(time_t)(timeout_ns / 1000000000ULL), (long)(timeout_ns % 1000000000ULL)};
        long n = syscall(SYS_epoll_pwait2, l->epfd, evs, max, &ts, NULL, (size_t)8);
        if (n >= 0 || errno != ENOSYS)
            return (int)n;
        atomic_store(&no_pwait2, 1);
    }
#endif
    return epoll_wait(l->epfd, evs, max, (int)((timeout_ns + 999999ULL) / 1000000ULL));
}

int bt_loop_run_once(bt_loop *l, int max_wait_ms)
{
    run_ready(l);
    if (atomic_load(&l->aborted) && !l->abort_seen) {
        l->abort_seen = 1;
        wake_all(l);
    }
    /* fibers that ended: out of the abort list (a pass over it only then:
     * thousands of fibers on a loop) */
    if (l->compacted != l->finished) {
        l->compacted = l->finished;
        int32_t k = 0;
        for (int32_t i = 0; i < l->nall; i++)
            if (l->all[i]->state != BT_FIBER_DONE)
                l->all[k++] = l->all[i];
        l->nall = k;
    }

    uint64_t now = now_ns();
    uint64_t timeout = l->ready_head ? 0 : (uint64_t)max_wait_ms * 1000000ULL;
    if (l->nheap > 0) {
        uint64_t d = l->heap[0]->deadline;
        uint64_t left = d > now ? d - now : 0;
        if (left < timeout)
            timeout = left;
    }
    struct epoll_event evs[256];
    int n = wait_events(l, evs, 256, timeout);
    for (int i = 0; i < n; i++) {
        bt_fiber *f = evs[i].data.ptr;
        uint32_t ev = evs[i].events;
        if (f->state == BT_FIBER_WAITING && f->wait_fd >= 0 && f->wait_fd == f->reg_fd &&
            (ev & (f->wait_ev | EPOLLERR | EPOLLHUP))) {
            heap_remove(l, f);
            f->revents = ev;
            ready(l, f);
        } else if (f->state != BT_FIBER_READY && f->reg_fd >= 0) {
            /* nobody waits for it: stop it from firing again */
            epoll_ctl(l->epfd, EPOLL_CTL_DEL, f->reg_fd, NULL);
            f->reg_fd = -1;
            f->reg_ev = 0;
        }
    }
    now = now_ns();
    while (l->nheap > 0 && l->heap[0]->deadline <= now) {
        bt_fiber *f = l->heap[0];
        heap_remove(l, f);
        f->revents = 0;
        ready(l, f);
    }
    return l->live;
}

void bt_loop_unpark(bt_loop *l)
{
    for (int32_t i = 0; i < l->nall && l->nparked > 0; i++) {
        bt_fiber *f = l->all[i];
        if (f->parked && f->state == BT_FIBER_WAITING) {
            f->parked = 0;
            l->nparked--;
            ready(l, f);
        }
    }
}

uint64_t bt_loop_finished(const bt_loop *l)
{
    return l->finished;
}

void bt_loop_abort(bt_loop *l)
{
    atomic_store(&l->aborted, 1);
}

/* ---- what the connection's code calls ------------------------------------- */

bt_fiber *bt_fiber_self(void)
{
    return tl_cur;
}

int bt_io_aborted(void)
{
    return tl_cur && atomic_load_explicit(&tl_cur->loop->aborted, memory_order_relaxed);
}

static int poll_wait(int fd, int events, int64_t timeout_ms)
{
    struct pollfd pfd = {.fd = fd, .events = (short)events};
    uint64_t deadline = timeout_ms >= 0 ? now_ns() + (uint64_t)timeout_ms * 1000000ULL : 0;
    for (;;) {
        int left = -1;
        if (timeout_ms >= 0) {
            uint64_t now = now_ns();
            left = now >= deadline ? 0 : (int)((deadline - now + 999999ULL) / 1000000ULL);
        }
        int n = poll(&pfd, 1, left);
        if (n > 0)
            return pfd.revents ? pfd.revents : POLLIN;
        if (n == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

static int arm(bt_loop *l, bt_fiber *f, int fd, uint32_t want, int rearm)
{
    if (!rearm && f->reg_fd == fd && f->reg_ev == want)
        return 0;
    struct epoll_event ev = {.events = want, .data.ptr = f};
    int op = f->reg_fd == fd ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(l->epfd, op, fd, &ev) != 0) {
        /* the number was re-used for a new socket (MOD: not registered) or
         * is still registered (ADD): try the other */
        op = op == EPOLL_CTL_MOD ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
        if (epoll_ctl(l->epfd, op, fd, &ev) != 0)
            return -1;
    }
    f->reg_fd = fd;
    f->reg_ev = want;
    return 0;
}

static int suspend(bt_fiber *f, uint64_t deadline)
{
    bt_loop *l = f->loop;
    f->state = BT_FIBER_WAITING;
    f->revents = 0;
    f->deadline = deadline;
    if (deadline && heap_push(l, f) != 0) {
        f->state = BT_FIBER_READY;
        return -1;
    }
    to_loop(f, 0);
    heap_remove(l, f);
    f->wait_fd = -1;
    return atomic_load_explicit(&l->aborted, memory_order_relaxed) ? -1 : 0;
}

int bt_io_wait(int fd, int events, int64_t timeout_ms, int rearm)
{
    bt_fiber *f = tl_cur;
    if (!f)
        return poll_wait(fd, events, timeout_ms);
    bt_loop *l = f->loop;
    if (atomic_load_explicit(&l->aborted, memory_order_relaxed) || fd < 0)
        return -1;
    uint32_t want = ((events & POLLIN) ? EPOLLIN : 0) | ((events & POLLOUT) ? EPOLLOUT : 0);
    if (arm(l, f, fd, want, rearm) != 0)
        return -1;
    f->wait_fd = fd;
    f->wait_ev = want;
    uint64_t deadline = timeout_ms >= 0 ? now_ns() + (uint64_t)timeout_ms * 1000000ULL : 0;
    if (timeout_ms == 0)
        deadline = now_ns();  /* a poll: whatever is there by the next loop pass */
    if (suspend(f, deadline) != 0)
        return -1;
    /* EPOLLIN/OUT/ERR/HUP have poll's values */
    return (int)(f->revents & (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP));
}

int bt_io_sleep_until(uint64_t ns)
{
    bt_fiber *f = tl_cur;
    if (!f) {
        struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        return 0;
    }
    if (atomic_load_explicit(&f->loop->aborted, memory_order_relaxed))
        return -1;
    f->wait_fd = -1;
    return suspend(f, ns ? ns : 1);
}

int bt_io_park(void)
{
    bt_fiber *f = tl_cur;
    if (!f || atomic_load_explicit(&f->loop->aborted, memory_order_relaxed))
        return -1;
    f->wait_fd = -1;
    f->parked = 1;
    f->loop->nparked++;
    int rc = suspend(f, 0);
    if (f->parked) {  /* woken by the abort, not bt_loop_unpark */
        f->parked = 0;
        f->loop->nparked--;
    }
    return rc;
}

void bt_io_forget(int fd)
{
    bt_fiber *f = tl_cur;
    if (!f || f->reg_fd < 0)
        return;
    if (fd >= 0 && fd == f->reg_fd)
        epoll_ctl(f->loop->epfd, EPOLL_CTL_DEL, fd, NULL);
    f->reg_fd = -1;
    f->reg_ev = 0;
}
