# Copyright 2026 The helixtrack_ros authors
# SPDX-License-Identifier: Apache-2.0
