// SPDX-License-Identifier: MIT
/*
 * thresholds_test — the finding kinds' thresholds table (tracer/analyze/thresholds.def, as data
 * in thresholds.c) is whole and reads back:
 *   rows     every kind of findings.def has a threshold row, or names (AN_THRESHOLD_OF) another
 *            kind's row it is judged by, never both; option names and an_opts members are
 *            unique; each row's help is there.
 *   defaults an_opts_default sets each member to its row's default; the default is in its
 *            range and, written as `--help` writes it, parses back to itself bit for bit.
 *   parse    by unit: a value sets its member (and only it); a value out of range or
 *            malformed is refused with a message naming the option, the member unchanged.
 * Prints "ok - …" / "not ok - …"; exits 1 on a failure.
 */
#include <string.h>

#include "analyzer.h"
#include "check.h"
#include "thresholds.h"

static const char *const kind_names[AN_FINDING_KINDS] = {
#define AN_FINDING(e, name, title, one, many, rank, trigger, advice) [AN_##e] = name,
#include "findings.def"
};

static const struct { enum an_finding_kind kind; const char *field; } borrowed[] = {
#define AN_THRESHOLD_OF(kind, field) { AN_##kind, #field },
#include "thresholds.def"
};
#define NBORROWED (sizeof(borrowed) / sizeof(borrowed[0]))

static bool same_member(const struct an_opts *a, const struct an_opts *b,
			const struct an_threshold *t)
{
	size_t n = t->unit == AN_UNIT_RATIO ? sizeof(double) : sizeof(uint64_t);

	return !memcmp((const char *)a + t->offset, (const char *)b + t->offset, n);
}

static void test_rows(void)
{
	for (int k = 0; k < AN_FINDING_KINDS; k++) {
		size_t own = 0, lent = 0;

		for (size_t i = 0; i < AN_THRESHOLDS; i++)
			own += an_thresholds[i].kind == (enum an_finding_kind)k;
		for (size_t b = 0; b < NBORROWED; b++)
			lent += borrowed[b].kind == (enum an_finding_kind)k;
		CHECK((own > 0) != (lent > 0),
		      "%s: a threshold row of its own (%zu) or one it is judged by (%zu), not both",
		      kind_names[k], own, lent);
	}
	for (size_t b = 0; b < NBORROWED; b++) {
		const struct an_threshold *by = NULL;

		for (size_t i = 0; i < AN_THRESHOLDS; i++)
			if (!strcmp(an_thresholds[i].field, borrowed[b].field))
				by = &an_thresholds[i];
		CHECK(by && by->kind != borrowed[b].kind, "%s is judged by %s: a row of another kind",
		      kind_names[borrowed[b].kind], borrowed[b].field);
	}
	for (size_t i = 0; i < AN_THRESHOLDS; i++) {
		const struct an_threshold *t = &an_thresholds[i];
		size_t same_opt = 0, same_field = 0;

		for (size_t j = 0; j < AN_THRESHOLDS; j++) {
			same_opt += !strcmp(t->option, an_thresholds[j].option);
			same_field += !strcmp(t->field, an_thresholds[j].field) ||
				      an_thresholds[j].offset == t->offset;
		}
		CHECK(same_opt == 1, "--%s: one row has this option (%zu)", t->option, same_opt);
		CHECK(same_field == 1, "%s: one row sets this member (%zu)", t->field, same_field);
		CHECK((unsigned)t->kind < AN_FINDING_KINDS && t->help && *t->help && *t->option != '-',
		      "--%s: a kind, a help line, an option without its dashes", t->option);
	}
}

static void test_defaults(void)
{
	struct an_opts dflt;

	an_opts_default(&dflt);
	for (size_t i = 0; i < AN_THRESHOLDS; i++) {
		const struct an_threshold *t = &an_thresholds[i];
		struct an_opts o, before;
		char text[64], from_opts[64], err[512] = "";
		bool in_range;
		int ret;

		if (t->unit == AN_UNIT_RATIO) {
			double d;

			memcpy(&d, (const char *)&dflt + t->offset, sizeof(d));
			CHECK(d == t->rdef, "--%s: an_opts_default sets %s to the row's default %g (%g)",
			      t->option, t->field, t->rdef, d);
			in_range = t->rdef > t->rmin && t->rdef <= t->rmax;
		} else {
			uint64_t v;

			memcpy(&v, (const char *)&dflt + t->offset, sizeof(v));
			CHECK_U64(v, t->def, "--%s: an_opts_default sets %s to the row's default",
				  t->option, t->field);
			in_range = t->def >= t->min && t->def <= t->max;
		}
		CHECK(in_range, "--%s: its default is in its range", t->option);
		an_threshold_format(t, NULL, text, sizeof(text));
		an_threshold_format(t, &dflt, from_opts, sizeof(from_opts));
		CHECK(!strcmp(text, from_opts),
		      "--%s: the default written from the row and from an_opts alike (%s, %s)",
		      t->option, text, from_opts);
		memset(&o, 0xa5, sizeof(o));
		memcpy(&before, &o, sizeof(o));
		ret = an_threshold_parse(t, text, &o, err, sizeof(err));
		CHECK(!ret && same_member(&o, &dflt, t), "--%s %s: parses back to the default [%s]",
		      t->option, text, err);
		memcpy((char *)&before + t->offset, (const char *)&o + t->offset,
		       t->unit == AN_UNIT_RATIO ? sizeof(double) : sizeof(uint64_t));
		CHECK(!memcmp(&o, &before, sizeof(o)), "--%s: sets %s only", t->option, t->field);
	}
}

/* one good value and two bad ones per unit: the member set or left alone */
static void test_parse(void)
{
	static const struct {
		enum an_unit unit;
		const char *good, *bad_form, *bad_range;
		uint64_t want;
		double rwant;
	} cases[] = {
		{ AN_UNIT_DURATION, "45ms", "45", "0ns", 45000000, 0 },
		{ AN_UNIT_RATIO, "0.7", "x", "1.5", 0, 0.7 },
		{ AN_UNIT_COUNT, "50", "5x", "0", 50, 0 },
		{ AN_UNIT_SIZE, "2M", "2Q", NULL, 2u << 20, 0 },
	};

	for (size_t i = 0; i < AN_THRESHOLDS; i++) {
		const struct an_threshold *t = &an_thresholds[i];

		for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			const char *bad[] = { cases[c].bad_form, cases[c].bad_range };
			char err[512], prefix[80];
			struct an_opts o, keep;

			if (cases[c].unit != t->unit)
				continue;
			an_opts_default(&o);
			CHECK(!an_threshold_parse(t, cases[c].good, &o, err, sizeof(err)),
			      "--%s %s: accepted", t->option, cases[c].good);
			if (t->unit == AN_UNIT_RATIO)
				CHECK(*(double *)((char *)&o + t->offset) == cases[c].rwant,
				      "--%s %s: set", t->option, cases[c].good);
			else
				CHECK_U64(*(uint64_t *)((char *)&o + t->offset), cases[c].want,
					  "--%s %s: set", t->option, cases[c].good);
			snprintf(prefix, sizeof(prefix), "--%s '", t->option);
			for (size_t b = 0; b < 2; b++) {
				if (!bad[b])
					continue;
				memcpy(&keep, &o, sizeof(o));
				err[0] = 0;
				CHECK(an_threshold_parse(t, bad[b], &o, err, sizeof(err)) < 0 &&
				      !strncmp(err, prefix, strlen(prefix)) && !memcmp(&o, &keep, sizeof(o)),
				      "--%s %s: refused, member kept (%s)", t->option, bad[b], err);
			}
		}
	}
}

int main(void)
{
	test_rows();
	test_defaults();
	test_parse();
	printf("# %d checks, %d failed\n", run, failed);
	return failed ? 1 : 0;
}
