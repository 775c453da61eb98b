/*
 * The progress line of put and get (mc/progress.h): drawn on stderr while
 * the bytes of an object of at least CLI_PROGRESS_MIN bytes move, when
 * stderr is a terminal; --progress draws it for any object and any
 * stderr, --no-progress never.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int
cli_set_progress(const char *v, void *target, char *why)
{
	(void)v;
	(void)why;
	*(int *)target = CLI_PROGRESS_ON;
	return 0;
}

int
cli_set_no_progress(const char *v, void *target, char *why)
{
	(void)v;
	(void)why;
	*(int *)target = CLI_PROGRESS_OFF;
	return 0;
}

/* The client's word on the bytes moved: the object's size decides, once known. */
static void
on_progress(void *arg, uint64_t moved, uint64_t total)
{
	struct cli_progress *p = arg;

	if (cli.progress == CLI_PROGRESS_AUTO &&
	    (p->size != 0 ? p->size : total) < CLI_PROGRESS_MIN)
		return;
	mc_progress_update(&p->line, moved, total);
}

void
cli_progress_begin(struct cli_progress *p, const char *verb, const char *key, uint64_t size)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->label, sizeof(p->label), "%s '%.*s'", verb, CLI_PROGRESS_KEY_SHOWN, key);
	mc_progress_start(&p->line, p->label, 0);
	if (cli.progress != CLI_PROGRESS_AUTO)
		p->line.on = cli.progress == CLI_PROGRESS_ON;
	p->size = size;
	if (p->line.on)
		mc_client_on_progress(mc_tool_client(), on_progress, p);
}

void
cli_progress_end(struct cli_progress *p)
{
	mc_client_on_progress(mc_tool_client(), NULL, NULL);
	mc_progress_end(&p->line);
}
