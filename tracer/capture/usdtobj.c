// SPDX-License-Identifier: MIT
/*
 * usdtobj.c — the tokio_usdt BPF object's open and load, libbpf's log (see usdtobj.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "ksched.h"
#include "kuring.h"
#include "seterr.h"
#include "usdtobj.h"
#include "tokio_usdt.skel.h"

/* ---- libbpf log ---- */
static bool libbpf_verbose;
static const struct tet_msgs *libbpf_msgs;
static char libbpf_last[512];

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	if (level == LIBBPF_WARN)
		snprintf(libbpf_last, sizeof(libbpf_last), "%s", buf);
	if (libbpf_verbose)
		tet_say(libbpf_msgs, TET_MSG_INFO, "libbpf: %s", buf);
	return 0;
}

void tet_libbpf_setup(bool verbose, const struct tet_msgs *msgs)
{
	libbpf_verbose = verbose;
	libbpf_msgs = msgs;
	libbpf_set_print(libbpf_print);
}

const char *tet_libbpf_last_error(void)
{
	return libbpf_last;
}

int tet_usdt_open(struct tokio_usdt **out, pid_t pid, char *err, size_t len)
{
	struct tokio_usdt *skel = tokio_usdt__open();

	if (!skel) {
		int ret = -errno;

		seterr(err, len, "cannot open the BPF object: %s", strerror(-ret));
		return ret;
	}
	skel->rodata->target_tgid = (uint32_t)(pid > 0 ? pid : 0);
	*out = skel;
	return 0;
}

int tet_usdt_load(struct tokio_usdt *skel, size_t ringbuf_bytes, char *err, size_t len)
{
	int ret = bpf_map__set_max_entries(skel->maps.events, (uint32_t)ringbuf_bytes);

	if (ret) {
		seterr(err, len, "ring buffer size %zu refused: %s", ringbuf_bytes, strerror(-ret));
		return ret;
	}
	tet_btf_release(); /* the set-up's questions are answered: libbpf parses its own */
	ret = tokio_usdt__load(skel);
	if (ret)
		seterr(err, len, "cannot load the BPF programs: %s%s%s", strerror(-ret),
		       *libbpf_last ? " — libbpf: " : "", libbpf_last);
	return ret;
}

bool tet_usdt_sched_prepare(struct tokio_usdt *skel, const struct tet_sched_opts *o,
			    struct tet_sched_info *info)
{
	return tet_sched_prepare(&(struct tet_sched_progs){ skel->progs.tet_switch,
				 skel->progs.tet_wakeup, skel->progs.tet_sample, skel->progs.tet_exit,
				 &skel->rodata->exit_group_dead_arg, &skel->rodata->steal_clock,
				 (int64_t *)&skel->rodata->steal_rq_delta }, o, info);
}

struct tet_sched *tet_usdt_sched_attach(struct tokio_usdt *skel, const struct tet_sched_opts *o,
					struct tet_sched_info *info)
{
	return tet_sched_attach(&(struct tet_sched_progs){ skel->progs.tet_switch,
				skel->progs.tet_wakeup, skel->progs.tet_sample, skel->progs.tet_exit,
				NULL, NULL, NULL }, o, info);
}

bool tet_usdt_uring_prepare(struct tokio_usdt *skel, bool off, const char *exe,
			    struct tet_uring_info *info)
{
	return tet_uring_prepare(&(struct tet_uring_progs){ skel->progs.tet_ur_create,
				 skel->progs.tet_ur_submit, skel->progs.tet_ur_complete,
				 (uint64_t *)&skel->rodata->target_exe_ino,
				 (uint32_t *)&skel->rodata->target_exe_dev }, off, exe, info);
}

struct tet_uring *tet_usdt_uring_attach(struct tokio_usdt *skel, struct tet_uring_info *info)
{
	return tet_uring_attach(&(struct tet_uring_progs){ skel->progs.tet_ur_create,
				skel->progs.tet_ur_submit, skel->progs.tet_ur_complete, NULL, NULL },
				info);
}
