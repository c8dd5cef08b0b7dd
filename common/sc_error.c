#include "sc_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const s_msgs[] = {
#define SC_ERR_MSG_(name, msg) msg,
    SC_ERRORS(SC_ERR_MSG_)
#undef SC_ERR_MSG_
};

static const char *const s_names[] = {
#define SC_ERR_NAME_(name, msg) #name,
    SC_ERRORS(SC_ERR_NAME_)
#undef SC_ERR_NAME_
};

const char *sc_strerror(int rc)
{
    if (rc == 0)
        return "success";
    if (rc > SC_E_BASE_ && rc < SC_E_MAX_)
        return s_msgs[rc - SC_E_BASE_ - 1];
    if (rc < 0 && rc > -4096)
        return strerror(-rc);
    return "unknown error";
}

const char *sc_errname(int rc)
{
    if (rc == 0)
        return "OK";
    if (rc > SC_E_BASE_ && rc < SC_E_MAX_)
        return s_names[rc - SC_E_BASE_ - 1];
    switch (-rc) {
    case ENOMEM: return "ENOMEM";
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case EAGAIN: return "EAGAIN";
    case EIO: return "EIO";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case ERANGE: return "ERANGE";
    case EINTR: return "EINTR";
    case EBUSY: return "EBUSY";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    default: return "ERRNO";
    }
}

int sc_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;

    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}
