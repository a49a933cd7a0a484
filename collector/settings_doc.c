/* README's settings table, made from the settings table. */
#include "collector/settings_doc.h"

#include <string.h>

static const char *size_text(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMG";
	int u = -1;
	while (u < 2 && v >= 1024 && v % 1024 == 0)
		v /= 1024, u++;
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u]);
	return buf;
}

/* "a,b,c" as "`a`, `b`, `c`" */
static void values_list(const char *values, char *out, size_t len)
{
	size_t n = 0;
	out[0] = 0;
	for (const char *v = values; *v && n < len;) {
		size_t l = strcspn(v, ",");
		n += (size_t)snprintf(out + n, len - n, "%s`%.*s`", v == values ? "" : ", ", (int)l, v);
		v += l + (v[l] == ',');
	}
}

void settings_values_text(const struct prof_setting *s, char *out, size_t len)
{
	char a[32], b[32], list[256];
	switch (s->type) {
	case PROF_SETTING_BOOL:
		snprintf(out, len, "`0`, `1`");
		return;
	case PROF_SETTING_UINT:
		if (s->max == UINT64_MAX)
			snprintf(out, len, "%llu and up", (unsigned long long)s->min);
		else
			snprintf(out, len, "%llu..%llu", (unsigned long long)s->min,
				 (unsigned long long)s->max);
		return;
	case PROF_SETTING_SIZE:
		snprintf(out, len, "%s..%s", size_text(s->min, a, sizeof a),
			 size_text(s->max, b, sizeof b));
		return;
	case PROF_SETTING_SECONDS:
		snprintf(out, len, "%s, up to %llu", s->flags & PROF_SETTING_ZERO_OK ? "0 (none)" : "over 0",
			 (unsigned long long)s->max);
		return;
	case PROF_SETTING_ENUM:
		values_list(s->values, out, len);
		return;
	case PROF_SETTING_STRING:
		snprintf(out, len, "%s", s->flags & PROF_SETTING_NONEMPTY ? "text" : "text or nothing");
		return;
	case PROF_SETTING_LIST:
		values_list(s->values, list, sizeof list);
		snprintf(out, len, "comma list of %s", list);
		return;
	}
	out[0] = 0;
}

void settings_markdown(FILE *f)
{
	static const char *when[] = {[PROF_WHEN_ANY] = "any time",
				     [PROF_WHEN_START] = "before start",
				     [PROF_WHEN_LOAD] = "at load"};
	fprintf(f, "| variable | `prof_set_config` key | default | values | set | `prof record` | "
		   "meaning |\n");
	fprintf(f, "|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < prof_nsettings; i++) {
		const struct prof_setting *s = &prof_settings[i];
		const char *def = s->def ? s->def : s->shown_default;
		char values[512], flag[128] = "";
		settings_values_text(s, values, sizeof values);
		if (s->record_flag && s->record_short)
			snprintf(flag, sizeof flag, "`-%c`, `%s%s%s`", s->record_short, s->record_flag,
				 s->record_arg ? " " : "", s->record_arg ? s->record_arg : "");
		else if (s->record_flag)
			snprintf(flag, sizeof flag, "`%s%s%s`", s->record_flag, s->record_arg ? " " : "",
				 s->record_arg ? s->record_arg : "");
		fprintf(f, "| `%s` | `%s` | %s%s%s | %s | %s | %s | %s |\n", s->env, s->name,
			def && *def ? "`" : "", def ? def : "", def && *def ? "`" : "", values,
			when[s->when], flag, s->help);
	}
}
