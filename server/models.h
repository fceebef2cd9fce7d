/*
 * models.h: loads the tokenizers and models named on the command line into
 * the service.
 *
 * Ownership: models_load borrows cfg and adds every model it loads to svc,
 * which owns them from then on. File bytes are read, parsed and freed here.
 */
#ifndef SERVER_MODELS_H
#define SERVER_MODELS_H

#include <stddef.h>

#include "config.h"

struct api_service;

/* Adds the built-in models (unless --no-builtins), each --tokenizer, each
 * --model with the tokenizer it brings, the built-in tokenizers whose names
 * are still free, each model's tokenizer=NAME, then sets --default-model
 * (models.c says why in that order). Returns 0, or -1 with a message naming
 * the model in err. */
int models_load(struct api_service *svc, const struct attnd_config *cfg, char *err, size_t errlen);

#endif
