/* Reading and writing a __slots__ entry of a Python class from C (tensor/_tensor.c,
 * exec/_steps.c): its offset in the object, found once from the class's member
 * descriptor, then a pointer away. Only for objects of exactly that class (a subclass may
 * put a property in its place, as BoundTensor does for LoDTensor's). */
#pragma once
#include <Python.h>
#include <structmember.h>

#define SLOT(object, offset) (*(PyObject **)((char *)(object) + (offset)))

/* ``type.name``'s offset into *offset (0), or a TypeError (-1) when it is no __slots__
 * entry of ``type`` itself */
static int slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset) {
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name); /* borrowed */
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type) ||
        ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "configure: %s.%s expected to be a __slots__ entry",
                     type->tp_name, name);
        return -1;
    }
    *offset = ((PyMemberDescrObject *)descr)->d_member->offset;
    return 0;
}
