/* version.h: the one place the release number is written. */
#ifndef API_VERSION_H
#define API_VERSION_H

#define ATTND_VERSION "0.1.0"

#endif
