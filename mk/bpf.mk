# mk/bpf.mk — BPF side of the tracer: vmlinux.h from the running kernel's BTF, CO-RE objects,
# and `bpftool gen skeleton` headers, all under $(OBJ).
#   bpf/X.bpf.c → $(OBJ)/bpf/X.bpf.o → $(OBJ)/X.skel.h  (included by tracer/*.c as "X.skel.h")

VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_ARCH    := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/')
BPF_MULTI   := /usr/include/$(shell uname -m)-linux-gnu
BPF_CFLAGS  := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BPF_MULTI) -I$(OBJ) -Ibpf \
               -Wall -Werror
BPF_SRCS    := $(wildcard bpf/*.bpf.c)
BPF_OBJS    := $(patsubst bpf/%.bpf.c,$(OBJ)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS   := $(patsubst bpf/%.bpf.c,$(OBJ)/%.skel.h,$(BPF_SRCS))

ALL_TARGETS += $(BPF_SKELS)

$(OBJ)/vmlinux.h:
	$(call msg,BTF,$@)
	$(Q)if [ ! -r "$(VMLINUX_BTF)" ]; then \
	    echo "error: no kernel BTF at $(VMLINUX_BTF): the tracer needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (set VMLINUX_BTF=path to use another BTF file)" >&2; \
	    exit 1; fi
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(OBJ)/bpf/%.bpf.o: bpf/%.bpf.c bpf/events.h bpf/common.bpf.h bpf/sched.bpf.h bpf/uring.bpf.h $(OBJ)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OBJ)/%.skel.h: $(OBJ)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@.tmp && mv $@.tmp $@

# Tracer objects that include a skeleton must be compiled after it: order-only for all of
# them (mk/tracer.mk compiles tracer/X.c to $(OBJ)/X.o), a real prerequisite for the includers.
$(TRACER_C_OBJS): | $(BPF_SKELS)
$(OBJ)/attach.o: $(BPF_SKELS) bpf/events.h
$(OBJ)/analyzer.o $(OBJ)/trace.o: bpf/events.h

# Keep the BPF objects (intermediate in the pattern chain) for bpftool/llvm-objdump inspection.
.SECONDARY: $(BPF_OBJS)
