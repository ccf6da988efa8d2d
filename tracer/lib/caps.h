/* SPDX-License-Identifier: MIT */
/* caps.h — the capabilities tracing needs (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN). */
#ifndef TET_CAPS_H
#define TET_CAPS_H
#include <linux/capability.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* This process's effective capability set as a bit mask (1 << CAP_x); 0 if capget fails. */
static inline uint64_t caps_effective(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return 0;
	return data[0].effective | (uint64_t)data[1].effective << 32;
}

/* Whether a capability set lets a process load and attach the tracer's programs. */
static inline bool caps_allow_tracing(uint64_t eff)
{
	return (eff & (1ull << CAP_BPF) && eff & (1ull << CAP_PERFMON)) ||
	       eff & (1ull << CAP_SYS_ADMIN);
}

#endif
