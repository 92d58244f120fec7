// libdbus-1 (the xdg-desktop-portal ScreenCast client in PipeWireScreen).
//
// Only non-variadic calls are used from Swift (the message iterator API); constants that are
// macros Swift cannot import are re-exported as functions named CDBus_<macro>.
#ifndef LIVEPUSH_CDBUS_H
#define LIVEPUSH_CDBUS_H
#include <dbus/dbus.h>

static inline int CDBus_TYPE_STRING(void) { return DBUS_TYPE_STRING; }
static inline int CDBus_TYPE_OBJECT_PATH(void) { return DBUS_TYPE_OBJECT_PATH; }
static inline int CDBus_TYPE_UINT32(void) { return DBUS_TYPE_UINT32; }
static inline int CDBus_TYPE_INT32(void) { return DBUS_TYPE_INT32; }
static inline int CDBus_TYPE_BOOLEAN(void) { return DBUS_TYPE_BOOLEAN; }
static inline int CDBus_TYPE_VARIANT(void) { return DBUS_TYPE_VARIANT; }
static inline int CDBus_TYPE_ARRAY(void) { return DBUS_TYPE_ARRAY; }
static inline int CDBus_TYPE_DICT_ENTRY(void) { return DBUS_TYPE_DICT_ENTRY; }
static inline int CDBus_TYPE_STRUCT(void) { return DBUS_TYPE_STRUCT; }
static inline int CDBus_TYPE_UNIX_FD(void) { return DBUS_TYPE_UNIX_FD; }
static inline int CDBus_TYPE_INVALID(void) { return DBUS_TYPE_INVALID; }
static inline int CDBus_MESSAGE_TYPE_SIGNAL(void) { return DBUS_MESSAGE_TYPE_SIGNAL; }
static inline int CDBus_MESSAGE_TYPE_METHOD_RETURN(void) { return DBUS_MESSAGE_TYPE_METHOD_RETURN; }
static inline int CDBus_MESSAGE_TYPE_ERROR(void) { return DBUS_MESSAGE_TYPE_ERROR; }
#endif
